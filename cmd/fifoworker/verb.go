package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func init() {
	// Verbs are listed in the order they are added: the order of use
	// (up before down), not the alphabet's.
	cobra.EnableCommandSorting = false
}

// verb is one command that does something: its options, filled in from
// its flags and arguments, are checked by Validate (a usage error, exit
// status 2) before Run, whose error is a failure (exit status 1) unless it
// carries another status (exitError). river's rivercli has the same shape.
type verb interface {
	Validate() error
	Run(ctx context.Context, c *cli) error
}

// cli is what a verb runs with.
type cli struct {
	env            opsEnv
	stdout, stderr io.Writer
	// chosen is the verb the command line names, its options filled in
	// and validated, once parse has run; nil when there is none to run
	// (help, completion, a usage error). execute runs it.
	chosen verb
}

// exitError ends the command with its exit status, saying err first unless
// it is nil (the verb said what it had to).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageError makes err a usage error: exit status 2.
func usageError(err error) error { return &exitError{code: 2, err: err} }

func usageErrorf(format string, a ...any) error { return usageError(fmt.Errorf(format, a...)) }

// exitStatus ends the command with code, saying nothing more.
func exitStatus(code int) error { return &exitError{code: code} }

// exitCode is the exit status err ends the command with: 0 for none, its
// own for an exitError, 1 for another error of a verb's Run (runChosen
// makes those exitErrors), and 2 for the rest, which only the command
// library's parsing returns: an unknown command or flag, a bad flag value,
// arguments a verb does not take.
func exitCode(err error) int {
	var e *exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &e):
		return e.code
	}
	return 2
}

// choose is the RunE of v's command: take fills v's positional arguments
// in (nil: it takes none), then v is validated and chosen. v runs only once
// parsing is over (execute), so parsing has no effect but its messages on
// stderr.
func (c *cli) choose(v verb, take func(args []string)) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if take != nil {
			take(args)
		}
		c.sayIgnored(cmd)
		if err := v.Validate(); err != nil {
			return usageError(err)
		}
		c.chosen = v
		return nil
	}
}

// runChosen runs the chosen verb: an error that carries no exit status is
// a failure (exit status 1).
func (c *cli) runChosen(ctx context.Context) error {
	err := c.chosen.Run(ctx, c)
	var e *exitError
	if err != nil && !errors.As(err, &e) {
		return &exitError{code: 1, err: err}
	}
	return err
}

// args is a positional-argument check that says what is wrong in the
// verb's words, e.g. "name exactly one job id".
func args(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) == n:
			return nil
		case n == 0:
			return fmt.Errorf("%s takes no %s (got %q)", cmd.Name(), what, args)
		}
		return fmt.Errorf("name exactly one %s (got %q)", what, args)
	}
}

// noArgs refuses arguments, but for a lone "help", which asks for the
// help as "fifoworker sweep help" always did.
func noArgs(cmd *cobra.Command, args []string) error {
	switch {
	case len(args) == 0:
		return nil
	case len(args) == 1 && args[0] == "help":
		return pflag.ErrHelp
	}
	return fmt.Errorf("unexpected arguments %q", args)
}

// group is a command that only holds verbs (asGroup).
func group(use, short, long string, verbs ...*cobra.Command) *cobra.Command {
	g := &cobra.Command{Use: use, Short: short, Long: long}
	asGroup(g)
	g.AddCommand(verbs...)
	return g
}

// asGroup makes g behave as a command that only holds verbs: alone it is
// a usage error that shows its usage, "help" shows its help, and another
// word is an unknown command.
func asGroup(g *cobra.Command) {
	g.Args = nil
	g.ValidArgsFunction = cobra.NoFileCompletions
	g.RunE = func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) == 0:
			fmt.Fprint(cmd.ErrOrStderr(), cmd.UsageString())
			return exitStatus(2)
		case args[0] == "help":
			return pflag.ErrHelp
		}
		return fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())
	}
}

// ignoredAnnotation marks a flag a verb accepts and ignores.
const ignoredAnnotation = "fifoworker_ignored"

// ignoreFlags adds to cmd, hidden from its help, the flags named: flags of
// other verbs of its group that every verb of the group took before each
// had its own, which a script may still pass. bindAll binds every flag of
// the group (into values nothing reads); the flags keep their types, so a
// bad value is still refused.
func ignoreFlags(cmd *cobra.Command, bindAll func(*pflag.FlagSet), names ...string) {
	all := pflag.NewFlagSet("", pflag.ContinueOnError)
	bindAll(all)
	for _, name := range names {
		f := all.Lookup(name)
		f.Hidden = true
		f.Annotations = map[string][]string{ignoredAnnotation: nil}
		cmd.Flags().AddFlag(f)
	}
}

// sayIgnored says on stderr which of the flags given cmd ignores.
func (c *cli) sayIgnored(cmd *cobra.Command) {
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if _, ok := f.Annotations[ignoredAnnotation]; ok {
			fmt.Fprintf(c.stderr, "%s: --%s is not %s's: ignored\n", cmd.CommandPath(), f.Name, cmd.Name())
		}
	})
}

// flagError is every command's flag error: a usage error that names the
// verbs of the group that have an unknown flag ("--live" on jobs get: jobs
// list has it).
func flagError(cmd *cobra.Command, err error) error {
	var unknown *pflag.NotExistError
	if !errors.As(err, &unknown) || !cmd.HasParent() {
		return usageError(err)
	}
	var have []string
	for _, sibling := range cmd.Parent().Commands() {
		if f := sibling.Flags().Lookup(unknown.GetSpecifiedName()); f != nil && !f.Hidden {
			have = append(have, sibling.CommandPath())
		}
	}
	if len(have) == 0 {
		return usageError(err)
	}
	return usageErrorf("%w (a flag of %s)", err, strings.Join(have, ", "))
}

// commandAnnotation marks a verb whose arguments, from the first that is
// not a flag, are a command of their own (local run): flags stop there.
const commandAnnotation = "fifoworker_command"

// oneDashFlags rewrites the long flags args gives with one dash (-name,
// -json=false), as the standard library's flag package took them before
// the CLI had a command library, to the two dashes pflag wants, so that
// scripts written then keep working. Only a flag of the command args names
// is rewritten, never a flag's value, an argument after "--", nor the
// arguments of a verb's own command.
func oneDashFlags(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil {
		return args
	}
	cmd.InitDefaultHelpFlag()
	lookup := func(name string) *pflag.Flag {
		if f := cmd.Flags().Lookup(name); f != nil {
			return f
		}
		return cmd.InheritedFlags().Lookup(name)
	}
	_, stopAtArgument := cmd.Annotations[commandAnnotation]
	out := slices.Clone(args)
	path := strings.Fields(cmd.CommandPath())[1:] // the words that name cmd
	for i := 0; i < len(out); i++ {
		a := out[i]
		if a == "--" {
			break
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := lookup(name)
		switch {
		case !strings.HasPrefix(a, "-") || a == "-":
			if len(path) > 0 && a == path[0] {
				path = path[1:]
				continue
			}
			if stopAtArgument {
				return out
			}
		case f == nil:
		case !strings.HasPrefix(a, "--") && len(name) > 1:
			out[i] = "-" + a
			fallthrough
		default:
			if !hasValue && f.NoOptDefVal == "" {
				i++ // its value
			}
		}
	}
	return out
}
