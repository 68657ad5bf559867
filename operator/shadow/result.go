package shadow

import (
	"fmt"
)

// Kind is what a failure is.
type Kind string

// The kinds of failure.
const (
	// Nondeterminism: the build's commands differ from the history's events
	// (Temporal's own check).
	Nondeterminism Kind = "nondeterminism"
	// Effect: an activity the build schedules where the history has one carries a
	// different key, amount, currency or target.
	Effect Kind = "effect"
	// Undecodable: a payload of the history the codec cannot open.
	Undecodable Kind = "undecodable"
	// Replay: any other error of the replay (an unregistered workflow type, a
	// panic in the workflow code).
	Replay Kind = "replay"
)

// Result is the check of one run's history.
type Result struct {
	WorkflowID   string
	RunID        string
	WorkflowType string
	Open         bool // the run was running when listed
	Failures     []Failure
}

// OK is whether this build replays the run as it ran.
func (r Result) OK() bool { return len(r.Failures) == 0 }

// Failure is one way this build does not do what a history did.
type Failure struct {
	Kind       Kind   `json:"kind"`
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
	// Event is the history's event where a nondeterminism shows, as the SDK
	// names it; for an effect, the activity's ActivityTaskScheduled.
	Event            string `json:"event,omitempty"`
	ActivityType     string `json:"activity_type,omitempty"`
	ScheduledEventID int64  `json:"scheduled_event_id,omitempty"`
	// Path is an effect's field, as a JSON path in the activity's arguments.
	Path string `json:"path,omitempty"`
	// Recorded is what the history holds (the event, or the field's value), and
	// Produced what this build does instead. A card token is shown as a digest.
	Recorded string `json:"recorded,omitempty"`
	Produced string `json:"produced,omitempty"`
	// Message is the error as the SDK or the codec gave it.
	Message string `json:"message,omitempty"`
}

// String is the failure on one line.
func (f Failure) String() string {
	head := fmt.Sprintf("%s %s run %s", f.Kind, f.WorkflowID, f.RunID)
	switch {
	case f.Kind == Effect:
		return fmt.Sprintf("%s: %s (event %d) %s: history %q, this build %q",
			head, f.ActivityType, f.ScheduledEventID, f.Path, f.Recorded, f.Produced)
	case f.Recorded != "" && f.Produced != "":
		return fmt.Sprintf("%s: at %s: history %s; this build %s", head, f.Event, f.Recorded, f.Produced)
	case f.Recorded != "":
		return fmt.Sprintf("%s: at %s: history %s; this build differs: %s", head, f.Event, f.Recorded, f.Message)
	}
	return fmt.Sprintf("%s: %s", head, f.Message)
}
