package kafka_test

import (
	"context"
	"encoding/base64"
	"errors"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/fifoworker/fifoworker/pkg/kafka"
)

// A record's key and value decode exactly as encoding/base64's StdEncoding
// decodes them, or the batch is refused where it refuses them: padding,
// trailing bits, newlines, characters outside the alphabet.
func FuzzKeysAndValuesDecodeAsTheStandardLibrary(f *testing.F) {
	for _, s := range []string{
		"", "YQ==", "YWI=", "YWJj", "am9iLTA=", "eyJ0eXBlIjoiam9iLnJ1biJ9",
		"YR==", "YWJ=", // trailing bits set: StdEncoding ignores them
		"YQ", "YQ=", "Y===", "=YQ=", "YQ==YQ==", "YW\nJj", "YWJj\r\n", "YW Jj", "YW-j", "YW_j", "****",
		"////", "++++", "AAAAAAAAAAAAAAAAAAAA", "QUJD\nREVG",
		// A character outside the alphabet, or padding, at each place of
		// the last quantum, in each of its three forms.
		"*Q==", "Y*==", "YQ*=", "YQ.=", "*WI=", "Y*I=", "YW*=", "*WJj", "Y*Jj", "YW*j", "YWJ*", "=WJj", "Y=Jj", "YW=j",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var got []byte
		p, err := kafka.New(kafka.Config{Handler: func(_ context.Context, r kafka.Record) error {
			got = r.Value
			return nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		ev := events.KafkaEvent{Records: map[string][]events.KafkaRecord{"t-0": {{Topic: "t", Partition: 0, Offset: 1, Value: s}}}}
		_, err = p.Process(context.Background(), ev)
		want, wantErr := base64.StdEncoding.DecodeString(s)
		switch {
		case wantErr != nil && !errors.Is(err, kafka.ErrInvalidBatch):
			t.Fatalf("%q: the standard library refuses it (%v), Process said %v", s, wantErr, err)
		case wantErr == nil && err != nil:
			t.Fatalf("%q: the standard library decodes it, Process refused it: %v", s, err)
		case wantErr == nil && s == "" && got != nil:
			t.Fatalf("an empty value is nil, got %q", got)
		case wantErr == nil && s != "" && string(got) != string(want):
			t.Fatalf("%q decodes as %q, the handler got %q", s, want, got)
		}
	})
}
