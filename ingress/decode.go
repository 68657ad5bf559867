package ingress

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// MaxNestedDepth bounds the nesting of arrays and objects in a request.
const MaxNestedDepth = 8

// FieldErrorf is a *FieldError of field with a formatted message.
func FieldErrorf(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// DecodeStrict decodes one JSON value into v, refusing what a lenient decoder lets
// through: invalid UTF-8, unknown fields, trailing data, deep nesting, and numbers
// that do not fit their field. Every kind decodes its requests with it; every
// error is a *FieldError.
func DecodeStrict(data []byte, v any) error {
	if !utf8.Valid(data) {
		return FieldErrorf("body", "not valid UTF-8")
	}
	if depth(data) > MaxNestedDepth {
		return FieldErrorf("body", "nested deeper than %d levels", MaxNestedDepth)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonFieldError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return FieldErrorf("body", "unexpected data after the JSON value")
	}
	return nil
}

// depth is the maximum nesting of arrays and objects, outside strings.
func depth(data []byte) int {
	d, max, inString, escaped := 0, 0, false, false
	for _, c := range data {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			d++
			if d > max {
				max = d
			}
		case c == '}' || c == ']':
			d--
		}
	}
	return max
}

func jsonFieldError(err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			field = "body"
		}
		if typeErr.Value == "number" || strings.HasPrefix(typeErr.Value, "number ") {
			return FieldErrorf(field, "must be an integer that fits in 64 bits")
		}
		return FieldErrorf(field, "must be of type %s, not %s", jsonType(typeErr.Type.Kind().String()), typeErr.Value)
	case errors.As(err, &syntaxErr):
		return FieldErrorf("body", "malformed JSON at byte %d", syntaxErr.Offset)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return FieldErrorf("body", "empty or truncated JSON")
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		if name = strings.Trim(name, `"`); name != "" {
			return FieldErrorf(name, "unknown field")
		}
		return FieldErrorf("body", "unknown field with an empty name")
	}
	return FieldErrorf("body", "%s", strings.TrimPrefix(err.Error(), "json: "))
}

func jsonType(kind string) string {
	switch kind {
	case "int64", "int":
		return "integer"
	case "slice":
		return "array"
	case "struct", "map":
		return "object"
	}
	return kind
}
