// Package tenants is what a tenant is: its name's rule. Its keys, budgets,
// limits and weights are its subpackages (apikeys, quota, fleetrate,
// fairness).
package tenants

// maxTenantLen bounds a tenant's name.
const maxTenantLen = 63

// Valid reports whether name is a tenant name: lower-case letters, digits,
// '-' and '_', beginning with a letter or digit, at most 63 characters. It never
// holds ':' or '%', which workflow IDs (identity.WorkflowID) rely on.
func Valid(name string) bool {
	if name == "" || len(name) > maxTenantLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case (c == '-' || c == '_') && i > 0:
		default:
			return false
		}
	}
	return true
}
