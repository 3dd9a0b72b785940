package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/task"
)

// NameExport is the export's name in the registry: a job's spec "task".
// It is the default task (DefaultTask).
const NameExport = "export"

// ExportExt is the extension of an export's result: newline-delimited
// JSON.
const ExportExt = "ndjson"

// ErrUnexportable is wrapped (under fifo.Permanent) by the error of an
// article the export cannot write: an attribute of a type it does not know,
// or a number that is not a JSON number.
var ErrUnexportable = errors.New("tasks: article cannot be exported")

// Export writes the job's tenant's articles as NDJSON, one object per
// article (Object), in article id order. It is safe for concurrent use.
//
// Spec: SpecPageSize, optional (1 to MaxPageSize, default DefaultPageSize).
// Any other key is accepted and ignored, as before tasks had names, except
// a key that another registered task reads and the export does not (taken
// from the registrations' keys, registry.go): a spec with one meant that
// task and left out its "task", and ValidateSpec refuses it rather than
// let it run as an export. Run does not: a job created before that rule
// ran the export when it was accepted, and still does.
type Export struct {
	articles articles
	refused  keyOwners // the keys ValidateSpec refuses, with the task that reads each
}

// exportKeys are the spec keys the export reads.
var exportKeys = []string{SpecPageSize}

var _ task.Task = (*Export)(nil)

// NewExport returns the export of cfg's Articles table, refusing the spec
// keys of the service's other tasks, or the error of cfg.Validate.
func NewExport(cfg Config) (*Export, error) {
	return newExport(cfg, othersKeys(registered, registration{name: NameExport, keys: exportKeys}))
}

func newExport(cfg Config, refused keyOwners) (*Export, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Export{articles: cfg.articles(), refused: refused}, nil
}

// buildExport is the export's constructor in the registry: it refuses the
// other registrations' keys.
func buildExport(cfg Config, others keyOwners) (task.Task, error) {
	return as(func(cfg Config) (*Export, error) { return newExport(cfg, others) })(cfg, others)
}

// ValidateSpec implements task.Task: no key that only another task reads,
// and a page size of 1 to MaxPageSize. The error wraps ErrInvalidSpec and
// names the key. It is the export's registered spec check, which intake
// runs without an Export.
func (e *Export) ValidateSpec(spec map[string]string) error { return checkExportSpec(spec, e.refused) }

// checkExport is the export's registered spec check: checkExportSpec,
// refusing the other registrations' keys.
func checkExport(others keyOwners) task.SpecCheck {
	return func(spec map[string]string) error { return checkExportSpec(spec, others) }
}

// checkExportSpec is the export's spec check: no key of refused, and the
// page size is 1 to MaxPageSize. The error wraps ErrInvalidSpec and names
// the key.
func checkExportSpec(spec map[string]string, refused keyOwners) error {
	for _, key := range slices.Sorted(maps.Keys(refused)) {
		if _, ok := spec[key]; ok {
			return fmt.Errorf(`%w: the export does not read %q, a key of task %s; a spec for that task names it ("%s":"%s")`,
				ErrInvalidSpec, key, refused[key], task.SpecTask, refused[key])
		}
	}
	_, err := pageSize(spec)
	return err
}

// Ext implements task.Task: ExportExt, for every job.
func (e *Export) Ext(task.Job) string { return ExportExt }

// Run implements task.Task. It writes each of the job's tenant's articles
// as one line of JSON, page by page, and reports the count so far after
// every page but the last. A spec it cannot run, and an article it cannot
// write, are permanent errors; a failed query is not. A failed write is
// passed on as it is: the worker fails the job for good when the write
// was refused for the candidate's size, and retries it otherwise.
func (e *Export) Run(ctx context.Context, in task.Input) (task.Output, error) {
	size, err := pageSize(in.Job.Spec)
	if err != nil {
		return task.Output{}, fifo.Permanent(err)
	}
	enc := json.NewEncoder(in.Out) // Encode ends each value with a newline: NDJSON
	enc.SetEscapeHTML(false)       // article bodies keep their <, > and &
	n, err := e.articles.each(ctx, in.Job.Tenant, size, in.Progress, func(item map[string]types.AttributeValue) error {
		obj, err := Object(item)
		if err != nil {
			return fifo.Permanent(fmt.Errorf("article %s: %w", articleID(item), err))
		}
		if err := enc.Encode(obj); err != nil {
			return fmt.Errorf("tasks: write article %s: %w", articleID(item), err)
		}
		return nil
	})
	if err != nil {
		return task.Output{}, err
	}
	return task.Output{Items: n}, nil
}

// Object returns the JSON form of an article: an object with every
// attribute, the key attributes included. Encoded by encoding/json, its
// members are sorted by name. Attribute values map to JSON as follows:
//
//   - S: a string.
//   - N: a number, with DynamoDB's digits exactly (up to 38 significant
//     digits; never rounded through a float64).
//   - BOOL: true or false. NULL: null.
//   - B: a string, the bytes in standard base64 (as encoding/json writes
//     []byte).
//   - SS, NS, BS: arrays of the same, in the order DynamoDB returns them
//     (a set has no order of its own).
//   - L: an array; M: an object; their elements by these same rules.
//
// Any other type, and a number that is not a JSON number literal, is an
// error wrapping ErrUnexportable.
func Object(item map[string]types.AttributeValue) (map[string]any, error) {
	obj := make(map[string]any, len(item))
	for name, av := range item {
		v, err := value(av)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", name, err)
		}
		obj[name] = v
	}
	return obj, nil
}

func value(av types.AttributeValue) (any, error) {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return v.Value, nil
	case *types.AttributeValueMemberN:
		return number(v.Value)
	case *types.AttributeValueMemberBOOL:
		return v.Value, nil
	case *types.AttributeValueMemberNULL:
		return nil, nil
	case *types.AttributeValueMemberB:
		return v.Value, nil // []byte: base64
	case *types.AttributeValueMemberSS:
		return v.Value, nil
	case *types.AttributeValueMemberNS:
		ns := make([]json.Number, len(v.Value))
		for i, s := range v.Value {
			n, err := number(s)
			if err != nil {
				return nil, err
			}
			ns[i] = n
		}
		return ns, nil
	case *types.AttributeValueMemberBS:
		return v.Value, nil // [][]byte: base64 strings
	case *types.AttributeValueMemberL:
		l := make([]any, len(v.Value))
		for i, e := range v.Value {
			x, err := value(e)
			if err != nil {
				return nil, fmt.Errorf("element %d: %w", i, err)
			}
			l[i] = x
		}
		return l, nil
	case *types.AttributeValueMemberM:
		return Object(v.Value)
	}
	return nil, fmt.Errorf("%w: attribute value of type %T", ErrUnexportable, av)
}

// jsonNumber is the grammar of a JSON number (RFC 8259, section 6).
var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// number checks that s can be written as a JSON number as it is.
func number(s string) (json.Number, error) {
	if !jsonNumber.MatchString(s) {
		return "", fmt.Errorf("%w: number %q is not a JSON number", ErrUnexportable, s)
	}
	return json.Number(s), nil
}
