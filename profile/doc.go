// SPDX-License-Identifier: Apache-2.0

// Package profile turns a capture read against the image it ran into
// profiles and reports: Symbolize classifies and symbolizes the records
// once, Profile writes them as a pprof profile, Analyze computes the
// per-region, per-library and per-function figures that report, rank, plan
// and diff all use.
package profile
