//! The fields of `INFO replication` that failover and convergence decide on.

/// A server's replication role.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Role {
    /// Accepts writes (`role:master`).
    Primary,
    /// Follows `host:port` (`role:slave`).
    Replica {
        /// `master_host` as the server was told it.
        host: String,
        /// `master_port`.
        port: u16,
        /// `master_link_status:up`.
        link_up: bool,
    },
}

/// What `INFO replication` says of one server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replication {
    /// Primary or replica of whom.
    pub role: Role,
    /// How far into the replication stream the server is: `master_repl_offset` (a primary's
    /// own offset, or what a replica has received and applied).
    pub offset: i64,
    /// `connected_slaves`.
    pub connected_replicas: u32,
    /// `master_replid`: the history the offset counts in.
    pub replication_id: String,
}

impl Replication {
    /// Parses the text of `INFO replication`; None when it has no `role` line.
    pub fn parse(text: &str) -> Option<Replication> {
        let field = |name: &str| {
            text.lines().find_map(|line| {
                line.trim_end()
                    .strip_prefix(name)
                    .and_then(|rest| rest.strip_prefix(':'))
                    .map(str::to_string)
            })
        };
        let role = match field("role")?.as_str() {
            "master" => Role::Primary,
            "slave" => Role::Replica {
                host: field("master_host").unwrap_or_default(),
                port: field("master_port")
                    .and_then(|p| p.parse().ok())
                    .unwrap_or(0),
                link_up: field("master_link_status").as_deref() == Some("up"),
            },
            _ => return None,
        };
        Some(Replication {
            role,
            offset: field("master_repl_offset")
                .and_then(|o| o.parse().ok())
                .unwrap_or(0),
            connected_replicas: field("connected_slaves")
                .and_then(|n| n.parse().ok())
                .unwrap_or(0),
            replication_id: field("master_replid").unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Captured from redis-server 7.0.15 (Debian), a primary with two replicas and one of them.
    const PRIMARY: &str = "# Replication\r\nrole:master\r\nconnected_slaves:2\r\nslave0:ip=198.18.0.7,port=6379,state=online,offset=1234,lag=0\r\nslave1:ip=198.18.0.8,port=6379,state=online,offset=1234,lag=1\r\nmaster_failover_state:no-failover\r\nmaster_replid:8c1f0a4c9d1b6e0f2a3b4c5d6e7f8091a2b3c4d5\r\nmaster_replid2:0000000000000000000000000000000000000000\r\nmaster_repl_offset:1234\r\nsecond_repl_offset:-1\r\n";
    const REPLICA: &str = "# Replication\r\nrole:slave\r\nmaster_host:cache-0.cache-headless.apps.svc\r\nmaster_port:6379\r\nmaster_link_status:down\r\nmaster_last_io_seconds_ago:-1\r\nmaster_sync_in_progress:0\r\nslave_read_repl_offset:1200\r\nslave_repl_offset:1200\r\nslave_priority:100\r\nslave_read_only:1\r\nreplica_announced:1\r\nconnected_slaves:0\r\nmaster_replid:8c1f0a4c9d1b6e0f2a3b4c5d6e7f8091a2b3c4d5\r\nmaster_repl_offset:1200\r\n";

    #[test]
    fn a_primary_and_a_replica_parse() {
        let primary = Replication::parse(PRIMARY).unwrap();
        assert_eq!(primary.role, Role::Primary);
        assert_eq!(primary.offset, 1234);
        assert_eq!(primary.connected_replicas, 2);
        let replica = Replication::parse(REPLICA).unwrap();
        assert_eq!(
            replica.role,
            Role::Replica {
                host: "cache-0.cache-headless.apps.svc".into(),
                port: 6379,
                link_up: false
            }
        );
        assert_eq!(replica.offset, 1200);
        assert_eq!(
            replica.replication_id,
            "8c1f0a4c9d1b6e0f2a3b4c5d6e7f8091a2b3c4d5"
        );
    }

    #[test]
    fn text_without_a_role_is_not_replication_info() {
        assert_eq!(
            Replication::parse("# Server\r\nredis_version:7.0.15\r\n"),
            None
        );
        assert_eq!(Replication::parse("role:sentinel\r\n"), None);
    }
}
