package projection

// ShardOf is shardOf, for the tests of the stored layout.
var ShardOf = shardOf
