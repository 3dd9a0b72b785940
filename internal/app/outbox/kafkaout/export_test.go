package kafkaout

// ValidTopic is validTopic, for the table test of its edges.
var ValidTopic = validTopic
