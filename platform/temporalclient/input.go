package temporalclient

import (
	"context"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
)

// Input decodes into v the input of the workflow's current run (its first
// history event), with dc, the client's data converter.
func Input(ctx context.Context, c client.Client, dc converter.DataConverter, workflowID string, v any) error {
	it := c.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if !it.HasNext() {
		return fmt.Errorf("history of %s: empty", workflowID)
	}
	ev, err := it.Next()
	if err != nil {
		return fmt.Errorf("history of %s: %w", workflowID, err)
	}
	if err := dc.FromPayloads(ev.GetWorkflowExecutionStartedEventAttributes().GetInput(), v); err != nil {
		return fmt.Errorf("input of %s: %w", workflowID, err)
	}
	return nil
}
