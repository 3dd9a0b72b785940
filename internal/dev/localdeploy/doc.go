// Package localdeploy creates, on the local stack (or any endpoint), the
// queues, tables and buckets that template.yaml declares, with the same
// properties, so that template.yaml stays the single source of truth.
//
// Invariants:
//   - Deploying twice is harmless: existing resources are converged (the
//     template's queue attributes set again, TTL enabled) or checked (a
//     table's key schema, stream and index names must match, else an error
//     says to delete it), never duplicated. An attribute removed from the
//     template is not removed from an existing queue.
//   - Resources are created in dependency order (a dead-letter queue before
//     the queue whose redrive policy names it).
//   - Physical names are deterministic: the declared name, or
//     <stack>-<LogicalId>, so a rerun finds what the last run made.
//   - What cannot be emulated locally (bucket policies, encryption settings,
//     functions, which pkg/localesm runs instead) is reported as skipped,
//     never silently dropped.
//   - The template is deployed with its parameters' defaults: conditions,
//     Fn::If and Fn::FindInMap are decided on them (samtemplate's Holds,
//     Choose and FindInMap), and a resource or output whose condition is
//     false is not created, and reported as skipped.
//   - Tables are created without deletion protection whatever the template
//     says: a local stack is torn down with its tables.
//   - Kafka (template-kafka.yaml): CloudFormation has no topic resource, so
//     each topic a Kafka event source mapping reads is created on the local
//     broker (Clients.KafkaBootstrapServers) with TopicPartitions partitions
//     and docs/KAFKA.md's settings, one broker's replication aside; one
//     that exists is checked (its partitions) and its settings set again.
//     The brokers are the template's KafkaBootstrapServers whatever it
//     says, and an empty MskClusterArn gets an ARN of the deployment's own
//     that names them (Result.Parameters, Result.KafkaCluster). The
//     mappings themselves, like the functions, run under pkg/localesm.
package localdeploy
