//! Ported etcd tests: raw_node.
