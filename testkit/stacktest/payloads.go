package stacktest

import (
	commonpb "go.temporal.io/api/common/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// WalkPayloads calls f on every Payload inside m (a history event, a
// response): what a test reads to look into a history's payloads.
func WalkPayloads(m proto.Message, f func(*commonpb.Payload)) {
	if p, ok := m.(*commonpb.Payload); ok {
		f(p)
		return
	}
	m.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			for i := range v.List().Len() {
				WalkPayloads(v.List().Get(i).Message().Interface(), f)
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				WalkPayloads(mv.Message().Interface(), f)
				return true
			})
		case fd.Message() != nil && !fd.IsList() && !fd.IsMap():
			WalkPayloads(v.Message().Interface(), f)
		}
		return true
	})
}
