// Package kubernetes holds orderflow's Kubernetes manifests (a kustomize base and a
// production overlay); its tests build them and check them against the
// Kubernetes API types and the drain invariants.
package kubernetes
