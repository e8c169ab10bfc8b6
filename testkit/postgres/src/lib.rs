//! memvault-test-postgres: a real, throwaway Postgres for tests, with no Docker.
//!
//! [`fresh_database`] returns a new, empty database on a server shared by the whole test
//! process, and a guard that keeps its name. The server is:
//!
//! - `MEMVAULT_TEST_PG_URL` when set (a libpq URL or `key=value` string of a server and
//!   role allowed to `CREATE DATABASE`): used as it is; each database is dropped (`WITH
//!   (FORCE)`) when its guard drops.
//! - otherwise a cluster this crate starts once per test process (a [`OnceLock`]): `initdb`
//!   into a temporary directory `/tmp/mvpg.<pid>.<n>` (under `TMPDIR` when set), then
//!   `pg_ctl start` with `fsync=off`, `listen_addresses=''` and its unix socket in that
//!   directory, so parallel test binaries never share a socket (the port, derived from the
//!   pid, only names the socket file). As root, `initdb` and `pg_ctl` run as the
//!   `postgres` user (`initdb` refuses root): the directory is chowned to it and the
//!   commands use [`CommandExt::uid`]/[`CommandExt::gid`].
//!
//! Binaries are found with `pg_config --bindir`, else in the highest
//! `/usr/lib/postgresql/<version>/bin`, else on `PATH`. Without them this PANICS with how
//! to install them: a Postgres suite must fail, never skip.
//!
//! # Clean-up
//!
//! Rust runs no destructor for statics at exit, so the cluster is stopped by a watchdog:
//! a small `sh` loop started with the cluster, detached from the test's output, that
//! waits for the test process to exit, then sends the postmaster `SIGQUIT` (an immediate
//! shutdown, as `pg_ctl stop -m immediate`) and removes the directory. If the watchdog is
//! killed too, the cluster stays up until the machine restarts; its data is in the
//! temporary directory, which `pg_ctl -D <dir>/data stop -m immediate` (as `postgres`)
//! and `rm -rf` clean up.
//!
//! This crate depends on no memvault crate.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// The environment variable naming an existing server to use instead of starting one.
pub const URL_VARIABLE: &str = "MEMVAULT_TEST_PG_URL";

/// A fresh, empty database; dropped with the guard when the server is an external one
/// (`MEMVAULT_TEST_PG_URL`), left to the cluster's removal otherwise.
#[derive(Debug)]
pub struct TestDatabase {
    name: String,
    url: String,
    external: bool,
}

impl TestDatabase {
    /// The database's connection string (`key=value` for a started cluster; the external
    /// URL with its database replaced otherwise).
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        if !self.external {
            return;
        }
        // Best effort: a leftover database on a developer's server is harmless.
        if let Ok(mut admin) = server().admin.lock() {
            let _ = admin.batch_execute(&format!(
                "DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)",
                self.name
            ));
        }
    }
}

/// The shared server of this test process.
pub struct Server {
    /// Connection string of the server's `postgres` database (or the external URL).
    admin_url: String,
    admin: Mutex<postgres::Client>,
    /// Makes `url` point at another database of the same server.
    kind: Kind,
}

enum Kind {
    /// Started here: `key=value` strings on the socket directory (trusted); TCP on
    /// `127.0.0.1:port` asks for a password (scram-sha-256).
    Started {
        socket_dir: PathBuf,
        port: u16,
    },
    External,
}

impl Server {
    /// The connection string of the server's maintenance database.
    pub fn admin_url(&self) -> &str {
        &self.admin_url
    }

    /// The connection string of `database` on this server.
    pub fn url(&self, database: &str) -> String {
        match &self.kind {
            Kind::Started { socket_dir, port } => format!(
                "host={} port={port} user=postgres dbname={database}",
                socket_dir.display()
            ),
            Kind::External => with_database(&self.admin_url, database),
        }
    }

    /// A `postgresql://` URL of `database` over TCP on 127.0.0.1 as a role with a
    /// password (the role `memvault_pw`, password `memvault-test-password`, created on
    /// first use), where a wrong password is refused. Panics on an external server
    /// (`MEMVAULT_TEST_PG_URL`), whose TCP address and authentication are not known here.
    pub fn password_url(&self, database: &str) -> String {
        let Kind::Started { port, .. } = &self.kind else {
            panic!("password_url needs the cluster this crate starts; unset {URL_VARIABLE}")
        };
        static ROLE: OnceLock<()> = OnceLock::new();
        ROLE.get_or_init(|| {
            self.admin
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .batch_execute(&format!(
                    "CREATE ROLE {PASSWORD_ROLE} LOGIN SUPERUSER PASSWORD '{PASSWORD}'"
                ))
                .unwrap_or_else(|error| panic!("CREATE ROLE {PASSWORD_ROLE}: {error:?}"));
        });
        format!("postgresql://{PASSWORD_ROLE}:{PASSWORD}@127.0.0.1:{port}/{database}")
    }
}

/// The role [`Server::password_url`] connects as, and its password.
pub const PASSWORD_ROLE: &str = "memvault_pw";
pub const PASSWORD: &str = "memvault-test-password";

/// The server of this test process, started on first use.
pub fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| match std::env::var(URL_VARIABLE) {
        Ok(url) if !url.trim().is_empty() => {
            let admin = postgres::Client::connect(&url, postgres::NoTls)
                .unwrap_or_else(|error| panic!("cannot connect to {URL_VARIABLE}={url}: {error}"));
            Server {
                admin_url: url,
                admin: Mutex::new(admin),
                kind: Kind::External,
            }
        }
        _ => start_cluster(),
    })
}

/// A new, empty database on [`server`]. Panics when none can be made.
pub fn fresh_database() -> TestDatabase {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let server = server();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.subsec_nanos())
        .unwrap_or(0);
    let name = format!(
        "t_{}_{}_{nanos}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    server
        .admin
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .batch_execute(&format!("CREATE DATABASE \"{name}\""))
        .unwrap_or_else(|error| panic!("CREATE DATABASE {name}: {error:?}"));
    TestDatabase {
        url: server.url(&name),
        name,
        external: matches!(server.kind, Kind::External),
    }
}

/// `url` (a libpq URL or `key=value` string) naming `database` instead of its own.
fn with_database(url: &str, database: &str) -> String {
    for scheme in ["postgresql://", "postgres://"] {
        if let Some(rest) = url.strip_prefix(scheme) {
            let (main, query) = match rest.split_once('?') {
                Some((main, query)) => (main, Some(query)),
                None => (rest, None),
            };
            let authority = main
                .split_once('/')
                .map_or(main, |(authority, _)| authority);
            let mut out = format!("{scheme}{authority}/{database}");
            if let Some(query) = query {
                out.push('?');
                out.push_str(query);
            }
            return out;
        }
    }
    // key=value: a later key wins.
    format!("{url} dbname={database}")
}

fn install_hint() -> &'static str {
    "Postgres server binaries (initdb, pg_ctl, postgres) are needed for the Postgres tests: \
     install them with `apt-get install -y postgresql` (Debian/Ubuntu), or point \
     MEMVAULT_TEST_PG_URL at a server where the role may CREATE DATABASE"
}

/// The directory holding `initdb` and `pg_ctl`.
fn find_bindir() -> PathBuf {
    let has_tools = |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();
    if let Ok(output) = Command::new("pg_config").arg("--bindir").output() {
        if output.status.success() {
            let dir = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
            if has_tools(&dir) {
                return dir;
            }
        }
    }
    let mut versioned: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let dir = entry.path().join("bin");
            has_tools(&dir).then_some((version, dir))
        })
        .collect();
    versioned.sort();
    if let Some((_, dir)) = versioned.pop() {
        return dir;
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            if has_tools(&dir) {
                return dir;
            }
        }
    }
    panic!("no Postgres binaries found. {}", install_hint());
}

/// The uid and gid of `user` from /etc/passwd.
fn user_ids(user: &str) -> Option<(u32, u32)> {
    let passwd = fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        if fields.len() > 3 && fields[0] == user {
            Some((fields[2].parse().ok()?, fields[3].parse().ok()?))
        } else {
            None
        }
    })
}

/// Runs `command` (as `ids` when given) to completion; panics with its output on failure.
fn run(mut command: Command, ids: Option<(u32, u32)>, what: &str, log: &Path) {
    if let Some((uid, gid)) = ids {
        command.uid(uid).gid(gid);
    }
    // Output goes to a file, not a pipe: the server `pg_ctl` starts must not hold a pipe
    // of ours open.
    let out = fs::File::create(log).unwrap_or_else(|error| panic!("create {log:?}: {error}"));
    let err = out
        .try_clone()
        .unwrap_or_else(|error| panic!("{log:?}: {error}"));
    let status = command
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .status()
        .unwrap_or_else(|error| panic!("{what}: cannot run it ({error}). {}", install_hint()));
    if !status.success() {
        let output = fs::read_to_string(log).unwrap_or_default();
        panic!("{what} failed ({status}):\n{output}");
    }
}

fn start_cluster() -> Server {
    let bindir = find_bindir();
    static CLUSTERS: AtomicU64 = AtomicU64::new(0);
    let pid = std::process::id();
    // Short: a unix socket path must stay under ~107 bytes.
    let base = std::env::var_os("TMPDIR")
        .map(PathBuf::from)
        .filter(|dir| dir.is_dir())
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    let dir = base.join(format!(
        "mvpg.{pid}.{}",
        CLUSTERS.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap_or_else(|error| panic!("create {dir:?}: {error}"));
    // A directory we just created is owned by our effective uid: root when it is 0.
    let root = fs::metadata(&dir)
        .map(|meta| meta.uid() == 0)
        .unwrap_or(false);
    let ids = if root {
        let ids = user_ids("postgres").unwrap_or_else(|| {
            panic!(
                "running as root, and there is no `postgres` user to run initdb as (it \
                 refuses root). {}",
                install_hint()
            )
        });
        std::os::unix::fs::chown(&dir, Some(ids.0), Some(ids.1))
            .unwrap_or_else(|error| panic!("chown {dir:?}: {error}"));
        Some(ids)
    } else {
        None
    };
    let data = dir.join("data");

    let mut initdb = Command::new(bindir.join("initdb"));
    initdb
        .arg("-D")
        .arg(&data)
        .args([
            "-U",
            "postgres",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
        ])
        .args(["-E", "UTF8", "--no-locale"])
        .arg("--no-sync");
    run(initdb, ids, "initdb", &dir.join("initdb.log"));

    // One port for both: the socket file's name and TCP on loopback (the password
    // tests). A free one, found by binding port 0.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .unwrap_or_else(|error| panic!("no free port on 127.0.0.1: {error}"));
    let options = format!(
        "-k {} -p {port} -c listen_addresses='127.0.0.1' -c fsync=off -c synchronous_commit=off \
         -c full_page_writes=off -c max_connections=300",
        dir.display()
    );
    let mut pg_ctl = Command::new(bindir.join("pg_ctl"));
    pg_ctl
        .arg("-D")
        .arg(&data)
        .arg("-l")
        .arg(dir.join("server.log"))
        .args(["-w", "-o", &options, "start"]);
    run(pg_ctl, ids, "pg_ctl start", &dir.join("pg_ctl.log"));

    start_watchdog(pid, &dir);

    let admin_url = format!(
        "host={} port={port} user=postgres dbname=postgres",
        dir.display()
    );
    let admin = postgres::Client::connect(&admin_url, postgres::NoTls).unwrap_or_else(|error| {
        let log = fs::read_to_string(dir.join("server.log")).unwrap_or_default();
        panic!("cannot connect to the test cluster at {admin_url}: {error}\n{log}")
    });
    Server {
        admin_url,
        admin: Mutex::new(admin),
        kind: Kind::Started {
            socket_dir: dir,
            port,
        },
    }
}

/// Starts the `sh` loop that stops the cluster in `dir` and removes `dir` once the
/// process `pid` exited (see the crate docs).
fn start_watchdog(pid: u32, dir: &Path) {
    let script = r#"
        while kill -0 "$1" 2>/dev/null; do sleep 0.5; done
        if [ -f "$2/data/postmaster.pid" ]; then
            kill -QUIT "$(head -n 1 "$2/data/postmaster.pid")" 2>/dev/null
            i=0
            while [ -f "$2/data/postmaster.pid" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
        fi
        rm -rf "$2"
    "#;
    let spawned = Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg("memvault-test-postgres-watchdog")
        .arg(pid.to_string())
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn();
    if let Err(error) = spawned {
        eprintln!(
            "memvault-test-postgres: no watchdog ({error}); stop the cluster in {} by hand",
            dir.display()
        );
    }
}
