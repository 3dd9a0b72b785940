package jobs

import (
	"github.com/aws/aws-lambda-go/events"

	"github.com/fifoworker/fifoworker/pkg/jobs/jobitem"
)

// ErrNotJob is returned by FromItem and FromStreamImage for an item that is
// not a job: an intent marker, or no item at all (the missing new image of a
// stream record for a deleted item). A stream reader skips those.
var ErrNotJob = jobitem.ErrNotJob

// FromStreamImage decodes an image of a Jobs table stream record, as Lambda
// delivers it (events.DynamoDBStreamRecord's NewImage or OldImage), into a
// Job: jobitem.FromStreamImage, the item's one decoder, which FromItem uses
// too, so an image and the item it shows decode alike, with the same
// errors: a record of an intent marker, or a missing image, is ErrNotJob.
// A reader that needs nothing else of this package imports jobitem alone,
// and links no DynamoDB client.
func FromStreamImage(image map[string]events.DynamoDBAttributeValue) (Job, error) {
	return jobitem.FromStreamImage(image)
}
