//! Ported etcd tests: replication.
