package awstest_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/fifoworker/fifoworker/pkg/awstest"
)

// A test pins what a store costs by counting its requests: install the
// counter on the store's client, run the operation, take the counts. (In an
// integration test the client is awstest.DynamoDB(t, ...), on the local
// stack; here a stand-in endpoint on 127.0.0.1 answers every request.)
func ExampleRequests() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = w.Write([]byte("{}"))
	}))
	defer srv.Close()

	counter := &awstest.Requests{}
	client := dynamodb.NewFromConfig(aws.Config{
		Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
	}, func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, counter.Count("dynamodb."))
		o.DisableValidateResponseChecksum = true
	})
	for range 2 {
		if _, err := client.ListTables(context.Background(), &dynamodb.ListTablesInput{}); err != nil {
			fmt.Println(err)
		}
	}
	fmt.Println(counter.Take())
	fmt.Println(counter.Take())
	// Output:
	// map[dynamodb.ListTables:2]
	// map[]
}
