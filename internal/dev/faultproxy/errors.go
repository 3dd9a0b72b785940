package faultproxy

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// An injected error, as the service itself would send it.
type serviceError struct {
	status  int
	code    string // the error code the SDK reports (ErrorCode())
	jsonNS  string // awsJson's __type namespace, "com.amazonaws.dynamodb.v20120810"
	fault   string // SQS's X-Amzn-Query-Error fault: Sender or Receiver
	message string
}

// The errors each service answers with, by kind; the second of each pair
// is the alternative a request draws half the time.
var serviceErrors = map[Service]map[Kind][2]serviceError{
	// DynamoDB (awsJson1_0): __type names the shape, the SDK strips the
	// namespace. Both 5xx are retried by status; both throttling codes are in
	// the SDK's throttle list (ProvisionedThroughputExceededException is what
	// a table's item operations answer, ThrottlingException what the
	// service's own rate limits answer).
	DynamoDB: {
		ServerError: {
			{status: 500, code: "InternalServerError", jsonNS: "com.amazonaws.dynamodb.v20120810", message: "Internal server error"},
			{status: 503, code: "ServiceUnavailable", jsonNS: "com.amazonaws.dynamodb.v20120810", message: "Service unavailable"},
		},
		Throttle: {
			{status: 400, code: "ProvisionedThroughputExceededException", jsonNS: "com.amazonaws.dynamodb.v20120810",
				message: "The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API."},
			{status: 400, code: "ThrottlingException", jsonNS: "com.amazon.coral.availability", message: "Rate of requests exceeds the allowed throughput."},
		},
	},
	// SQS (awsJson1_0, query compatible): __type names the shape, and
	// X-Amzn-Query-Error "<code>;<Sender|Receiver>" the code the SDK reports.
	// RequestThrottled is the model's throttling error (HTTP 403),
	// ThrottlingException the common one (400); both are throttle codes.
	SQS: {
		ServerError: {
			{status: 500, code: "InternalError", jsonNS: "com.amazonaws.sqs", fault: "Receiver", message: "We encountered an internal error. Please try again."},
			{status: 503, code: "ServiceUnavailable", jsonNS: "com.amazonaws.sqs", fault: "Receiver", message: "Service is unable to handle request."},
		},
		Throttle: {
			{status: 403, code: "RequestThrottled", jsonNS: "com.amazonaws.sqs", fault: "Sender", message: "Request is throttled."},
			{status: 400, code: "ThrottlingException", jsonNS: "com.amazon.coral.availability", fault: "Sender", message: "Rate exceeded"},
		},
	},
	// S3 (REST-XML): <Error><Code>. SlowDown is S3's throttling answer, a
	// 503, and a throttle code for the SDK.
	S3: {
		ServerError: {
			{status: 500, code: "InternalError", message: "We encountered an internal error. Please try again."},
			{status: 503, code: "ServiceUnavailable", message: "Service is unable to handle request."},
		},
		Throttle: {
			{status: 503, code: "SlowDown", message: "Please reduce your request rate."},
			{status: 503, code: "SlowDown", message: "Please reduce your request rate."},
		},
	},
}

// errorResponse renders fault kind k (ServerError or Throttle) of service
// s: status, headers and body.
func errorResponse(s Service, k Kind, alt bool, method string) (int, map[string]string, []byte) {
	pair := serviceErrors[s][k]
	e := pair[0]
	if alt {
		e = pair[1]
	}
	id := requestID()
	switch s {
	case DynamoDB, SQS:
		body, _ := json.Marshal(map[string]string{"__type": e.jsonNS + "#" + e.code, "message": e.message})
		hdr := map[string]string{"Content-Type": "application/x-amz-json-1.0", "X-Amzn-Requestid": id}
		if s == DynamoDB {
			// DynamoDB signs every answer with its CRC32; the SDK checks it
			// unless told not to.
			hdr["X-Amz-Crc32"] = strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10)
		} else {
			hdr["X-Amzn-Query-Error"] = e.code + ";" + e.fault
		}
		return e.status, hdr, body
	}
	hdr := map[string]string{"X-Amz-Request-Id": id, "X-Amz-Id-2": id + "/fault"}
	if method == http.MethodHead {
		return e.status, hdr, nil // HEAD answers carry no body; the SDK goes by the status
	}
	hdr["Content-Type"] = "application/xml"
	body := fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
		`<Error><Code>%s</Code><Message>%s</Message><RequestId>%s</RequestId><HostId>%s/fault</HostId></Error>`,
		e.code, e.message, id, id)
	return e.status, hdr, []byte(body)
}

func requestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return strings.ToUpper(hex.EncodeToString(b[:]))
}

// S3Operation names an S3 request from its method, its path-style path
// (/bucket or /bucket/key) and its query, as the S3 API does: PutObject,
// GetObject, HeadObject, DeleteObject, CopyObject, ListObjectsV2,
// HeadBucket, DeleteObjects, the multipart operations, ... A request it
// does not recognise is "METHOD /bucket" or "METHOD /bucket/key".
func S3Operation(method, path string, query url.Values, header http.Header) string {
	bucket, key, hasKey := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	hasKey = hasKey && key != ""
	has := func(q string) bool { _, ok := query[q]; return ok }
	if bucket == "" {
		if method == http.MethodGet {
			return "ListBuckets"
		}
		return method + " /"
	}
	if hasKey {
		switch method {
		case http.MethodPut:
			switch {
			case has("partNumber") && header.Get("X-Amz-Copy-Source") != "":
				return "UploadPartCopy"
			case has("partNumber"):
				return "UploadPart"
			case has("tagging"):
				return "PutObjectTagging"
			case header.Get("X-Amz-Copy-Source") != "":
				return "CopyObject"
			}
			return "PutObject"
		case http.MethodGet:
			switch {
			case has("uploadId"):
				return "ListParts"
			case has("tagging"):
				return "GetObjectTagging"
			case has("attributes"):
				return "GetObjectAttributes"
			}
			return "GetObject"
		case http.MethodHead:
			return "HeadObject"
		case http.MethodDelete:
			if has("uploadId") {
				return "AbortMultipartUpload"
			}
			return "DeleteObject"
		case http.MethodPost:
			switch {
			case has("uploads"):
				return "CreateMultipartUpload"
			case has("uploadId"):
				return "CompleteMultipartUpload"
			}
		}
		return method + " /" + bucket + "/key"
	}
	switch method {
	case http.MethodGet:
		switch {
		case query.Get("list-type") == "2":
			return "ListObjectsV2"
		case has("versions"):
			return "ListObjectVersions"
		case has("uploads"):
			return "ListMultipartUploads"
		case has("location"):
			return "GetBucketLocation"
		case len(query) == 0 || has("prefix") || has("marker") || has("delimiter") || has("max-keys"):
			return "ListObjects"
		}
	case http.MethodHead:
		return "HeadBucket"
	case http.MethodPut:
		if len(query) == 0 {
			return "CreateBucket"
		}
	case http.MethodDelete:
		if len(query) == 0 {
			return "DeleteBucket"
		}
	case http.MethodPost:
		if has("delete") {
			return "DeleteObjects"
		}
	}
	return method + " /" + bucket
}
