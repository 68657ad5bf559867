package shadow

import (
	"bytes"
	"encoding/json"
	"fmt"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
)

// toJSON serializes arguments with dc, as a worker sends them, and reads them
// back as one JSON array.
func toJSON(dc converter.DataConverter, args ...any) ([]byte, error) {
	ps, err := dc.ToPayloads(args...)
	if err != nil {
		return nil, fmt.Errorf("serialize arguments: %w", err)
	}
	return payloadsJSON(dc, ps)
}

// payloadsJSON opens payloads with dc (the codec first) and returns them as one
// JSON array.
func payloadsJSON(dc converter.DataConverter, ps *commonpb.Payloads) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, p := range ps.GetPayloads() {
		var raw json.RawMessage
		if err := dc.FromPayload(p, &raw); err != nil {
			return nil, fmt.Errorf("open argument %d: %w", i, err)
		}
		if len(raw) == 0 {
			raw = json.RawMessage("null")
		}
		if !json.Valid(raw) { // bytes, not JSON: compared as their base64
			b, err := json.Marshal([]byte(raw))
			if err != nil {
				return nil, fmt.Errorf("argument %d: %w", i, err)
			}
			raw = b
		}
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(raw)
	}
	buf.WriteByte(']')
	return buf.Bytes(), nil
}
