package samtemplate_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Intake and the sweeper run with reserved concurrency, a parameter each,
// where 0 means none (Lambda would read a reserved 0 as "never run"): the
// cap keeps intake from taking the account's whole concurrency while
// DynamoDB is slow, and keeps a retried sweeper run from racing the next
// scheduled one on the same cursors.
func TestTemplateIntakeAndTheSweeperHaveReservedConcurrency(t *testing.T) {
	t.Parallel()
	tpl := loadRepoTemplate(t)
	for _, c := range []struct {
		fn, param string
		byDefault int
	}{
		{"IntakeFunction", "IntakeReservedConcurrency", 100},
		{"SweeperFunction", "SweeperReservedConcurrency", 1},
	} {
		p := tpl.Parameters[c.param]
		require.Equal(t, "Number", p.Type, c.param)
		require.Equal(t, c.byDefault, toInt(p.Default), c.param)
		require.Equal(t, 0, toInt(p.MinValue), "%s: 0 is allowed, and means none", c.param)
		v := tpl.Resources[c.fn].Properties["ReservedConcurrentExecutions"]
		require.Equal(t, ref(c.param), chosen(t, tpl, nil, v), c.fn)
		require.Equal(t, ref(c.param), chosen(t, tpl, map[string]string{c.param: "1"}, v), "%s: 1 is 1", c.fn)
		require.Nil(t, chosen(t, tpl, map[string]string{c.param: "0"}, v), "%s: 0 reserves nothing", c.fn)
	}
}
