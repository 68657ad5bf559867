package order

import "github.com/orderflow/orderflow/platform/identity"

// MaxKeyLen bounds a client's key (identity.MaxKeyLen).
const MaxKeyLen = identity.MaxKeyLen

// CheckKey says why key is not a client's key ("" when it is): identity.CheckKey.
func CheckKey(key string) string { return identity.CheckKey(key) }

// Visible reports whether s holds only visible ASCII characters
// (identity.VisibleString).
func Visible(s string) bool { return identity.VisibleString(s) }
