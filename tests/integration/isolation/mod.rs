//! The isolation matrix: three tenants, each with four kinds of key (the owner key, a
//! read-only key, an agent granted the tenant's restricted collection and an agent without
//! a grant), against every authenticated endpoint `/openapi.json` lists. Each endpoint is
//! called on the caller's own open and restricted collections (the access model decides
//! the status), with another tenant's ids inside the caller's own collection (404), and on
//! the other tenants' collections and ids (what a missing collection gives; never a 5xx).
//! No answer may carry another tenant's memory texts, tokens, memory ids, key ids or job
//! ids.
//!
//! The order keeps the matrix from breaking itself. Phase one runs every read, every
//! refused write and every cross-tenant case, then checks with each owner key that every
//! tenant's data is exactly as set up (apart from collections its own keys created under
//! another tenant's collection names, which stay in its own tenant). Phase two runs the
//! writes the model allows, on throwaway memories, collections and keys where they destroy
//! something, rotates every key last, and checks again. Refused writes carry the most
//! destructive body the endpoint takes (`dry_run: false`, threshold 0, min_score -1, ...),
//! so a write that slips through shows in the data even when its status looks right.
//!
//! Public endpoints (no `security` in the OpenAPI document: health, status and the
//! pageview beacon) take no key and serve no tenant's data, so there is nothing to
//! isolate; they are listed in `PUBLIC`, and any other endpoint without security fails
//! the test, as does an authenticated endpoint without an entry in `TABLE`.
//!
//! Layout: `table.rs` the endpoints (adding one means editing it only), `fixtures.rs` the
//! tenants and keys set up, `runner.rs` the cases and the access model's expectations,
//! `verify.rs` the data checks after each phase.

mod fixtures;
mod runner;
mod table;
mod verify;

use std::collections::BTreeMap;
use std::thread;
use std::time::Instant;

use memvault_fake_llm::{FakeLlmServer, FakeReply};

use crate::support::{expect_status, Client};
use fixtures::{set_up_tenant, KeyKind, Tenant, TENANT_LABELS};
use runner::{cases_for, run_phase, Case, Runner};
use table::{OWN_SUITES, PUBLIC, TABLE};
use verify::{verify_own_changes_only, verify_unchanged, TenantState};

/// The authenticated endpoints `/openapi.json` lists, mapped to `TABLE`; or every reason
/// they cannot be.
fn endpoints_from_openapi() -> (Vec<usize>, Vec<(String, String)>) {
    let document = expect_status(Client::anonymous().get("/openapi.json"), 200);
    let paths = document["paths"].as_object().expect("openapi paths");
    let mut found = Vec::new();
    let mut public = Vec::new();
    let mut problems = Vec::new();
    for (path, item) in paths {
        for method in ["get", "put", "post", "delete", "patch", "head", "options"] {
            let Some(operation) = item.get(method) else {
                continue;
            };
            let method = method.to_uppercase();
            let secured = operation["security"]
                .as_array()
                .is_some_and(|requirements| !requirements.is_empty());
            if !secured {
                if PUBLIC.contains(&(method.as_str(), path.as_str())) {
                    public.push((method, path.clone()));
                } else {
                    problems.push(format!(
                        "{method} {path} has no security in /openapi.json: add it to PUBLIC \
                         in tests/integration/isolation/table.rs if it really takes no key"
                    ));
                }
                continue;
            }
            if OWN_SUITES.contains(&(method.as_str(), path.as_str())) {
                continue;
            }
            match TABLE
                .iter()
                .position(|entry| entry.method == method && entry.template == path)
            {
                Some(index) => found.push(index),
                None => problems.push(format!(
                    "{method} {path} has no entry in TABLE (tests/integration/isolation/table.rs): \
                     give it its access class, shape and success status (and a body in \
                     `body_for` if it takes one)"
                )),
            }
        }
    }
    for (index, entry) in TABLE.iter().enumerate() {
        if !found.contains(&index) {
            problems.push(format!(
                "TABLE lists {} {}, which /openapi.json does not: remove the entry",
                entry.method, entry.template
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "the isolation matrix does not cover the API:\n{}",
        problems.join("\n")
    );
    found.sort_unstable();
    (found, public)
}

#[test]
fn every_key_of_every_tenant_stays_inside_its_tenant_and_its_grants() {
    let started = Instant::now();
    let (endpoints, public) = endpoints_from_openapi();
    let llm = FakeLlmServer::start();
    // The owner's extraction config passes its self-test; a refused one never gets there.
    llm.set_fallback(|_| FakeReply::chat("{\"ok\": true}"));
    let llm_url = llm.base_url();
    let tenants: Vec<Tenant> = thread::scope(|scope| {
        let handles: Vec<_> = TENANT_LABELS
            .map(|label| scope.spawn(move || set_up_tenant(label)))
            .into_iter()
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().expect("set-up panicked"))
            .collect()
    });
    let set_up_in = started.elapsed();

    let mut phase_one = Vec::new();
    let mut phase_two = Vec::new();
    for caller in 0..tenants.len() {
        let mut cases = cases_for(caller, &endpoints);
        cases.sort_by_key(|case| (case.stage(), case.order, case.kind));
        let (second, first): (Vec<Case>, Vec<Case>) =
            cases.into_iter().partition(Case::in_phase_two);
        phase_one.push(first);
        phase_two.push(second);
    }
    let mut failures = Vec::new();

    let runners: Vec<Runner> = (0..tenants.len())
        .map(|caller| Runner::new(&tenants, caller, &llm_url))
        .collect();
    let mut runners = run_phase(runners, &phase_one, false);
    for runner in &runners {
        failures.extend(runner.failures.iter().cloned());
    }
    for (index, tenant) in tenants.iter().enumerate() {
        let after = TenantState::read(tenant.owner());
        failures.extend(verify_unchanged(&tenants, index, &after));
    }
    for runner in &mut runners {
        runner.failures.clear();
    }

    let runners = run_phase(runners, &phase_two, true);
    for runner in &runners {
        failures.extend(runner.failures.iter().cloned());
        let after = TenantState::read(runner.owner());
        failures.extend(verify_own_changes_only(&tenants, runner, &after));
    }

    let mut by_kind: BTreeMap<KeyKind, usize> = BTreeMap::new();
    for runner in &runners {
        for (kind, count) in &runner.cases_by_kind {
            *by_kind.entry(*kind).or_default() += count;
        }
    }
    let total: usize = by_kind.values().sum();
    let cross: usize = runners.iter().map(|runner| runner.cross_cases).sum();
    let per_kind: Vec<String> = by_kind
        .iter()
        .map(|(kind, count)| format!("{} {count}", kind.label()))
        .collect();
    eprintln!(
        "isolation matrix: {total} cases ({} phase one, {} phase two; {} own tenant, {cross} \
         cross-tenant) over {} endpoints x {} tenants; per key kind: {}; set-up {:.1} s, \
         total {:.1} s; public endpoints skipped (no key, no tenant data): {}",
        phase_one.iter().map(Vec::len).sum::<usize>(),
        phase_two.iter().map(Vec::len).sum::<usize>(),
        total - cross,
        endpoints.len(),
        tenants.len(),
        per_kind.join(", "),
        set_up_in.as_secs_f64(),
        started.elapsed().as_secs_f64(),
        public
            .iter()
            .map(|(method, path)| format!("{method} {path}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    assert!(
        failures.is_empty(),
        "{} isolation failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
