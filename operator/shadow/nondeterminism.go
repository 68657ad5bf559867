package shadow

import (
	"errors"
	"regexp"
	"strconv"
	"strings"

	historypb "go.temporal.io/api/history/v1"

	"github.com/orderflow/orderflow/platform/payloadcodec"
)

// nondeterministic marks the SDK's errors of a replay whose commands differ from
// the history.
const nondeterministic = "[TMPRL1100]"

// replayFailure is a replay's error of history h as a failure: a nondeterminism
// with the event and the commands as far as the SDK's message says them, a
// payload the codec cannot open, or any other error. The raw message is kept.
func replayFailure(err error, h *historypb.History) Failure {
	msg := err.Error()
	if errors.Is(err, payloadcodec.ErrUnknownKey) || strings.Contains(msg, payloadcodec.ErrUnknownKey.Error()) ||
		strings.Contains(msg, "decrypt payload") {
		return Failure{Kind: Undecodable, Message: msg}
	}
	i := strings.Index(msg, nondeterministic)
	if i < 0 && !strings.Contains(msg, "nondeterministic") {
		return Failure{Kind: Replay, Message: msg}
	}
	f := Failure{Kind: Nondeterminism, Message: msg}
	if i >= 0 {
		f.Event, f.Recorded, f.Produced = parseMismatch(msg[i+len(nondeterministic):])
	}
	// Some wordings name only an event's ID: the history says what it is.
	if m := regexp.MustCompile(`(?i)event ?id: (\d+)`).FindStringSubmatch(msg); m != nil && f.Recorded == "" {
		id, _ := strconv.ParseInt(m[1], 10, 64)
		f.Event, f.Recorded = "event "+m[1], describe(h, id)
	}
	return f
}

// describe is the event id of h, by its type (and an activity's type).
func describe(h *historypb.History, id int64) string {
	for _, e := range h.GetEvents() {
		if e.GetEventId() != id {
			continue
		}
		d := strings.TrimPrefix(e.GetEventType().String(), "EVENT_TYPE_")
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil {
			d += " " + a.GetActivityType().GetName()
		}
		return d
	}
	return ""
}

// parseMismatch reads the SDK's wordings of a nondeterminism (best effort): the
// history's event, what the history holds there, what the code produced.
func parseMismatch(m string) (event, recorded, produced string) {
	m = strings.TrimSpace(m)
	switch {
	case cut(&m, "nondeterministic workflow: history event is "):
		recorded, produced, _ = strings.Cut(m, ", replay command is ")
	case cut(&m, "nondeterministic workflow: missing replay command for "):
		recorded, produced = m, "nothing"
	case cut(&m, "nondeterministic workflow: extra replay command for "):
		recorded, produced = "nothing", m
	case cut(&m, "During replay, a matching "):
		cmd, pos, _ := strings.Cut(m, " command was expected in history event position ")
		pos, _, _ = strings.Cut(pos, ".")
		return "position " + pos, cmd + " command", "nothing"
	default:
		return "", "", ""
	}
	recorded, produced = strings.TrimSpace(recorded), trimTail(produced)
	event, _, _ = strings.Cut(recorded, ":")
	return event, recorded, produced
}

// cut removes prefix from *m, if it starts with it.
func cut(m *string, prefix string) bool {
	rest, ok := strings.CutPrefix(*m, prefix)
	if ok {
		*m = rest
	}
	return ok
}

// trimTail ends a command where the SDK's wrapping of the message goes on.
func trimTail(s string) string {
	if i := strings.Index(s, `"`); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}
