//! Ported etcd tests: election.
