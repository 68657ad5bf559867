package payloadcodec

import (
	"net/http"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
)

// Converters are the data and failure converters of a Temporal client that encrypt
// through codec: payloads, and failure messages and stack traces too (Temporal
// keeps those outside payloads unless told to encode them).
func Converters(codec converter.PayloadCodec) (converter.DataConverter, converter.FailureConverter) {
	dc := converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), codec)
	return dc, temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{DataConverter: dc, EncodeCommonAttributes: true})
}

// Handler is the codec endpoint of the Temporal Web UI (POST {prefix}/decode and
// {prefix}/encode). It decrypts for whoever reaches it: serve it only behind
// codecauth.Guard.
func Handler(codec converter.PayloadCodec) http.Handler {
	inner := converter.NewPayloadCodecHTTPHandler(codec)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST, OPTIONS")
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 4<<20)
		inner.ServeHTTP(w, r)
	})
}
