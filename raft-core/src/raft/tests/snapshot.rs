//! Ported etcd tests: snapshot.
