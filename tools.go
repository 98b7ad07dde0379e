//go:build tools

// Package tools pins the chosen dependencies in go.mod before every one of
// them has an importer, so `go mod tidy` keeps them. Remove an entry once a
// real package imports it.
package tools

import ()
