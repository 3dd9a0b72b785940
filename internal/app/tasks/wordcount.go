package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/fifoworker/fifoworker/internal/base/ddbitem"
	"github.com/fifoworker/fifoworker/pkg/fifo"
	"github.com/fifoworker/fifoworker/pkg/task"
)

// NameWordCount is the word count's name in the registry: a job's spec
// "task".
const NameWordCount = "wordcount"

// The word count's spec key and its bounds.
const (
	// SpecFields is the job spec key of the attributes whose words are
	// counted, separated by "," alone: 1 to MaxFields names of 1 to
	// MaxFieldLength bytes, none twice, none with a space at either end
	// (refused, not trimmed: a name may hold a space inside). Default
	// DefaultFields.
	SpecFields = "fields"
	// DefaultFields is the fields of a spec without SpecFields.
	DefaultFields = "title,body"
	// MaxFields is the most fields a spec may name.
	MaxFields = 16
	// MaxFieldLength is the longest field name, in bytes.
	MaxFieldLength = 255
)

// ErrUncountable is wrapped (under fifo.Permanent) by the error of an
// article the word count cannot count: a field that holds something else
// than text, or an article without a string id.
var ErrUncountable = errors.New("tasks: article cannot be counted")

// WordCount counts the words of each of the job's tenant's articles: the
// worked example of a task (see pkg/task, "Adding a task"). Its result is
// one JSON object (WordCountResult), one article a line:
//
//	{"tenant":"t-1","fields":["title","body"],"articles":[
//	{"article_id":"a-00000","words":212},
//	{"article_id":"a-00001","words":0}
//	],"total":{"articles":2,"words":212}}
//
// Articles come in article id order. An article's words are those of its
// fields (SpecFields): an absent or NULL field holds none, a string (S)
// holds its words, and any other type fails the job (ErrUncountable). A
// word is a run of characters between spaces (unicode.IsSpace: any
// Unicode space) that holds at least one letter or digit: "Hello, world!"
// is two words, "—" none, and a script written without spaces (Chinese,
// Japanese, Thai) counts a run as one word. It is safe for concurrent
// use.
//
// Spec: SpecFields and SpecPageSize, both optional, and no other key but
// "task".
type WordCount struct {
	articles articles
}

var _ task.Task = (*WordCount)(nil)

// NewWordCount returns the word count of cfg's Articles table, or the
// error of cfg.Validate.
func NewWordCount(cfg Config) (*WordCount, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &WordCount{articles: cfg.articles()}, nil
}

// wordCountKeys are the spec keys the word count reads, and the only ones
// its spec may have.
var wordCountKeys = []string{task.SpecTask, SpecFields, SpecPageSize}

// ValidateSpec implements task.Task: no key but task, SpecFields and
// SpecPageSize, each within its bounds. The error wraps ErrInvalidSpec and
// names the key. It is the word count's registered spec check, which
// intake runs without a WordCount.
func (w *WordCount) ValidateSpec(spec map[string]string) error { return checkWordCountSpec(spec) }

// checkWordCountSpec is the word count's spec check: no key but
// wordCountKeys (a misspelt key would otherwise be ignored, and count what
// the client did not ask for), SpecFields and SpecPageSize within their
// bounds. The error wraps ErrInvalidSpec and names the key.
func checkWordCountSpec(spec map[string]string) error {
	for _, key := range slices.Sorted(maps.Keys(spec)) {
		if !slices.Contains(wordCountKeys, key) {
			return fmt.Errorf("%w: spec key %.80q is not the word count's (its keys: %s)", ErrInvalidSpec, key, strings.Join(wordCountKeys, ", "))
		}
	}
	if _, err := fields(spec); err != nil {
		return err
	}
	_, err := pageSize(spec)
	return err
}

// Ext implements task.Task: "json", for every job.
func (w *WordCount) Ext(task.Job) string { return "json" }

// Run implements task.Task: it writes the result as it reads the
// articles, page by page, reporting the count of articles so far after
// every page but the last.
func (w *WordCount) Run(ctx context.Context, in task.Input) (task.Output, error) {
	// A job created before a rule changed reaches Run unchecked: the same
	// check, and no retry can fix a spec it refuses.
	if err := checkWordCountSpec(in.Job.Spec); err != nil {
		return task.Output{}, fifo.Permanent(err)
	}
	names, _ := fields(in.Job.Spec)  // checked
	size, _ := pageSize(in.Job.Spec) // checked
	out := &countWriter{w: in.Out}
	out.json(`{"tenant":`, in.Job.Tenant)
	out.json(`,"fields":`, names)
	out.raw(`,"articles":[`)
	var total int64
	n, err := w.articles.each(ctx, in.Job.Tenant, size, in.Progress, func(item map[string]types.AttributeValue) error {
		id, words, err := countArticle(item, names)
		if err != nil {
			return fifo.Permanent(err)
		}
		total += words
		if out.articles > 0 {
			out.raw(",")
		}
		out.json("\n", WordCountArticle{ArticleID: id, Words: words})
		out.articles++
		return out.err
	})
	if err != nil {
		return task.Output{}, err
	}
	out.json("\n],\"total\":", WordCountTotal{Articles: n, Words: total})
	out.raw("}\n")
	if out.err != nil {
		return task.Output{}, out.err
	}
	return task.Output{Items: n}, nil
}

// WordCountResult is the word count's result, as a reader decodes it.
// Run writes it piece by piece, as it reads the articles, so that the
// result of a tenant of many articles is never held in memory whole.
type WordCountResult struct {
	Tenant   string             `json:"tenant"`
	Fields   []string           `json:"fields"`   // the attributes counted
	Articles []WordCountArticle `json:"articles"` // in article id order
	Total    WordCountTotal     `json:"total"`
}

// WordCountArticle is one article's count.
type WordCountArticle struct {
	ArticleID string `json:"article_id"`
	Words     int64  `json:"words"`
}

// WordCountTotal is the count of the tenant's articles and of their words.
type WordCountTotal struct {
	Articles int64 `json:"articles"`
	Words    int64 `json:"words"`
}

// countWriter writes the result, keeping the first write error: once it
// is set nothing more is written, and Run returns it as it is (the worker
// fails the job for good on a write refused for the result's size).
type countWriter struct {
	w        io.Writer
	err      error
	articles int
}

func (c *countWriter) raw(s string) {
	if c.err == nil {
		_, c.err = io.WriteString(c.w, s)
	}
}

// json writes prefix and v as JSON, HTML characters unescaped.
func (c *countWriter) json(prefix string, v any) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // strings, ints and slices of them: never fails
		c.err = fmt.Errorf("tasks: word count: %w", err)
		return
	}
	c.raw(prefix + strings.TrimSuffix(b.String(), "\n"))
}

// countArticle returns an article's id and the words of its fields.
func countArticle(item map[string]types.AttributeValue, names []string) (string, int64, error) {
	id, ok := item[AttrArticleID].(*types.AttributeValueMemberS)
	if !ok {
		return "", 0, fmt.Errorf("%w: an article without a string %s", ErrUncountable, AttrArticleID)
	}
	var words int64
	for _, name := range names {
		switch v := item[name].(type) {
		case nil, *types.AttributeValueMemberNULL:
		case *types.AttributeValueMemberS:
			words += countWords(v.Value)
		default:
			return "", 0, fmt.Errorf("%w: article %s: attribute %q holds a %s, not a string", ErrUncountable, articleID(item), name, ddbitem.TypeName(v))
		}
	}
	return id.Value, words, nil
}

// countWords counts the runs of non-space characters of s that hold a
// letter or a digit, reading s once without copying it.
func countWords(s string) int64 {
	var n int64
	inWord, counted := false, false
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		s = s[size:]
		if unicode.IsSpace(r) {
			inWord = false
			continue
		}
		if !inWord {
			inWord, counted = true, false
		}
		if !counted && (unicode.IsLetter(r) || unicode.IsNumber(r)) {
			n++
			counted = true
		}
	}
	return n
}

// fields reads SpecFields from a job spec.
func fields(spec map[string]string) ([]string, error) {
	v, ok := spec[SpecFields]
	if !ok {
		v = DefaultFields
	}
	names := strings.Split(v, ",")
	if len(names) > MaxFields {
		return nil, fmt.Errorf("%w: %s names %d fields; at most %d are allowed", ErrInvalidSpec, SpecFields, len(names), MaxFields)
	}
	seen := make(map[string]bool, len(names))
	for _, name := range names {
		switch {
		case name == "" || len(name) > MaxFieldLength:
			return nil, fmt.Errorf("%w: %s %.80q has a name that is not 1 to %d bytes", ErrInvalidSpec, SpecFields, v, MaxFieldLength)
		case strings.TrimFunc(name, unicode.IsSpace) != name:
			// Refused, not trimmed: an attribute's name may hold spaces, and
			// "title, body" most likely meant "body", not " body".
			return nil, fmt.Errorf(`%w: %s names %.80q, with a space at an end; names are separated by "," alone`, ErrInvalidSpec, SpecFields, name)
		case seen[name]:
			return nil, fmt.Errorf("%w: %s names %.80q twice", ErrInvalidSpec, SpecFields, name)
		}
		seen[name] = true
	}
	return names, nil
}
