"""What the sync observes, each read once: the previous status, the pods as attempts of replica
indices, the Services' records, and what Metacontroller last applied to a child."""
