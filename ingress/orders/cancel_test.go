package orders

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/orderflow/orderflow/ingress/intake"
	"github.com/orderflow/orderflow/workflows"
)

// acceptedClient accepts every update, and its result's wait ends with err.
type acceptedClient struct {
	client.Client
	err error
}

func (c acceptedClient) UpdateWorkflow(context.Context, client.UpdateWorkflowOptions) (client.WorkflowUpdateHandle, error) {
	return acceptedHandle(c), nil
}

type acceptedHandle acceptedClient

func (h acceptedHandle) WorkflowID() string             { return "" }
func (h acceptedHandle) RunID() string                  { return "" }
func (h acceptedHandle) UpdateID() string               { return "" }
func (h acceptedHandle) Get(context.Context, any) error { return h.err }

// A cancel the workflow accepted is under way when the wait for its result
// runs out, even if the SDK's timeout ends that wait before the caller's
// context reports done; another failure of the wait is not.
func TestAnAcceptedCancelWhoseWaitRanOutIsUnderWay(t *testing.T) {
	for _, row := range []struct {
		name string
		err  error
		want error
	}{
		{"the SDK's timeout, the context still live", client.NewWorkflowUpdateServiceTimeoutOrCanceledError(context.DeadlineExceeded), errCancelPending},
		{"another failure", errors.New("connection reset"), nil},
	} {
		t.Run(row.name, func(t *testing.T) {
			tw := NewTemporal(intake.Setup{Temporal: acceptedClient{err: row.err}, TaskQueue: "q"}.Starter(), workflows.Policy{})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := tw.Cancel(ctx, "order:t:http:k")
			if row.want != nil && !errors.Is(err, row.want) {
				t.Fatalf("err %v, want %v", err, row.want)
			}
			if row.want == nil && (err == nil || errors.Is(err, errCancelPending)) {
				t.Fatalf("err %v, want the failure itself", err)
			}
		})
	}
}
