package shadow

import (
	"reflect"
	"runtime"
	"strings"

	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// names is a workflow registry that only notes the type names registered, as the
// SDK names them: the option's name, or the function's own.
type names struct{ types []string }

var _ sdkworker.WorkflowRegistry = (*names)(nil)

func (n *names) RegisterWorkflow(w any) {
	n.RegisterWorkflowWithOptions(w, workflow.RegisterOptions{})
}

func (n *names) RegisterWorkflowWithOptions(w any, o workflow.RegisterOptions) {
	name := o.Name
	if name == "" {
		name = functionName(w)
	}
	for _, t := range n.types {
		if t == name {
			return
		}
	}
	n.types = append(n.types, name)
}

// RegisterDynamicWorkflow is noted as nothing: a dynamic workflow takes any type,
// so it names none to select.
func (n *names) RegisterDynamicWorkflow(any, workflow.DynamicRegisterOptions) {}

// functionName is the SDK's name of a workflow function: its last dotted part,
// without the -fm of a method value.
func functionName(w any) string {
	full := runtime.FuncForPC(reflect.ValueOf(w).Pointer()).Name()
	return strings.TrimSuffix(full[strings.LastIndex(full, ".")+1:], "-fm")
}
