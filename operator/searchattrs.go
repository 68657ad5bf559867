package operator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/orderflow/orderflow/workflows"
)

// registerSearchAttributes adds the Keyword attributes orderflow's workflows
// start with (workflows.SearchAttributeNames) to the namespace, those missing
// only: starts that name an attribute the namespace lacks are refused, so a
// worker's rollout stops here rather than the API's orders there.
func registerSearchAttributes(ctx context.Context, opts client.Options, stdout io.Writer) error {
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return fmt.Errorf("temporal at %s: %w", opts.HostPort, err)
	}
	defer c.Close()
	have, err := listSearchAttributes(ctx, c, opts.Namespace)
	if err != nil {
		return err
	}
	missing := map[string]enumspb.IndexedValueType{}
	for _, name := range workflows.SearchAttributeNames() {
		if _, ok := have.GetCustomAttributes()[name]; !ok {
			missing[name] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
		}
	}
	if len(missing) == 0 {
		fmt.Fprintf(stdout, "search attributes exist: %v\n", workflows.SearchAttributeNames())
		return nil
	}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: opts.Namespace, SearchAttributes: missing})
	var denied *serviceerror.PermissionDenied
	var unimplemented *serviceerror.Unimplemented
	if errors.As(err, &denied) || errors.As(err, &unimplemented) {
		return fmt.Errorf("add search attributes %v to %s (on Temporal Cloud, add them as Keyword with tcld or the Cloud UI, then run bootstrap again): %w",
			sortedNames(missing), opts.Namespace, err)
	}
	if err != nil {
		return fmt.Errorf("add search attributes %v to %s: %w", sortedNames(missing), opts.Namespace, err)
	}
	fmt.Fprintf(stdout, "search attributes registered: %v\n", sortedNames(missing))
	return nil
}

// listSearchAttributes reads the namespace's attributes; a namespace registered a
// moment ago may not be known to the frontend yet: it is asked again for up to a
// minute.
func listSearchAttributes(ctx context.Context, c client.Client, namespace string) (*operatorservice.ListSearchAttributesResponse, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		have, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
		var missing *serviceerror.NamespaceNotFound
		if err == nil || !errors.As(err, &missing) || time.Now().After(deadline) {
			if err != nil {
				return nil, fmt.Errorf("search attributes of %s: %w", namespace, err)
			}
			return have, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func sortedNames(m map[string]enumspb.IndexedValueType) []string {
	var names []string
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
