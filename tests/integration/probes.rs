//! The probe suite: short sequences of statements, remembered one at a time into a fresh
//! collection of the real server, each checked the way a user sees it: what search
//! returns (the current value found, a replaced one not), what `contradictions` lists and
//! what `profile` says. Families of sequences where a newer statement should replace (or,
//! time-bound, override) an older one, and control families where nothing may replace
//! anything. The pass rate is printed per family; the suite passes at 97% of sequences
//! with no control failing.
//!
//! The sequences are written for this suite (no evaluation data set is used).

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use chrono::Duration;
use memvault_types::clock::ManualClock;
use serde_json::{json, Value};

use crate::support::{new_tenant, start_in_process_with_clock, tenant_on, unique, Client};

/// What a sequence expects after its statements (and, for an expiring override, after
/// the clock has moved on).
#[derive(Clone, Copy)]
struct Check {
    /// Per statement: `N` its memory is current (search finds it, the profile lists it
    /// unless it is an episode), `O` it is not (replaced or set aside), `-` it stores
    /// nothing (a question, small talk).
    outcome: &'static str,
    /// (newer, older) statement pairs `contradictions` lists, and nothing else.
    pairs: &'static [(usize, usize)],
}

#[derive(Clone, Copy)]
struct Probe {
    statements: &'static [&'static str],
    /// A search naming the values involved, so a replaced value would match if it were
    /// still returned.
    query: &'static str,
    check: Check,
    /// Days to move the clock on, and what must hold then.
    later: Option<(i64, Check)>,
}

struct Family {
    name: &'static str,
    control: bool,
    /// Runs on a server of its own whose clock the probes move.
    clock: bool,
    probes: Vec<Probe>,
}

const REPLACED: Check = Check {
    outcome: "ON",
    pairs: &[(1, 0)],
};
const BOTH: Check = Check {
    outcome: "NN",
    pairs: &[],
};

/// The second statement replaces (or overrides) the first.
fn replaces(statements: &'static [&'static str], query: &'static str) -> Probe {
    with(statements, query, REPLACED)
}

/// Both statements stay current.
fn both(statements: &'static [&'static str], query: &'static str) -> Probe {
    with(statements, query, BOTH)
}

fn with(statements: &'static [&'static str], query: &'static str, check: Check) -> Probe {
    Probe {
        statements,
        query,
        check,
        later: None,
    }
}

/// The second statement overrides the first for a while; `days` later the first is
/// current again and nothing is listed.
fn expires(statements: &'static [&'static str], query: &'static str, days: i64) -> Probe {
    Probe {
        later: Some((
            days,
            Check {
                outcome: "NO",
                pairs: &[],
            },
        )),
        ..replaces(statements, query)
    }
}

fn families() -> Vec<Family> {
    let family = |name, control, probes| Family {
        name,
        control,
        clock: false,
        probes,
    };
    vec![
        family(
            "bare_preference",
            false,
            vec![
                replaces(&["I prefer tea.", "I prefer coffee."], "tea or coffee"),
                replaces(
                    &["I prefer green tea.", "I prefer espresso."],
                    "green tea or espresso",
                ),
                replaces(
                    &["I prefer window seats.", "I prefer aisle seats."],
                    "window or aisle seat",
                ),
                replaces(
                    &["I prefer dark mode.", "I prefer light mode."],
                    "dark mode or light mode",
                ),
                replaces(
                    &["I prefer summer.", "I prefer winter."],
                    "summer or winter",
                ),
                replaces(&["I prefer cats.", "I prefer dogs."], "cats or dogs"),
                replaces(
                    &["I prefer the train.", "I prefer driving."],
                    "train or driving",
                ),
                replaces(
                    &["I prefer jazz.", "I prefer classical music."],
                    "jazz or classical music",
                ),
                replaces(
                    &["I prefer email.", "I prefer phone calls."],
                    "email or phone calls",
                ),
                replaces(
                    &["I prefer mornings.", "I prefer evenings."],
                    "mornings or evenings",
                ),
                replaces(
                    &["I prefer red wine.", "I prefer beer."],
                    "red wine or beer",
                ),
                replaces(
                    &["I prefer paperbacks.", "I prefer audiobooks."],
                    "paperbacks or audiobooks",
                ),
                replaces(
                    &["I prefer hotels.", "I prefer Airbnbs."],
                    "hotels or Airbnbs",
                ),
                replaces(&["I prefer sushi.", "I prefer pizza."], "sushi or pizza"),
            ],
        ),
        family(
            "preference_phrasings",
            false,
            vec![
                replaces(
                    &["I prefer tea.", "I'd rather have coffee."],
                    "tea or coffee",
                ),
                replaces(
                    &["I prefer soda.", "I prefer lemonade."],
                    "soda or lemonade",
                ),
                replaces(&["I prefer spring.", "I prefer fall."], "spring or fall"),
                replaces(
                    &["I prefer coffee.", "These days I prefer tea."],
                    "coffee or tea",
                ),
                replaces(
                    &["I prefer tea.", "I've switched to coffee."],
                    "tea or coffee",
                ),
                replaces(
                    &[
                        "I prefer Thai food.",
                        "I switched from Thai food to Italian food.",
                    ],
                    "Thai or Italian food",
                ),
                replaces(
                    &["I prefer the bus.", "I would prefer the subway."],
                    "bus or subway",
                ),
                replaces(
                    &["I prefer mornings.", "I'm more of an evening person now."],
                    "morning or evening person",
                ),
                replaces(
                    &["I prefer dogs.", "I'm more of a cat person."],
                    "dog or cat person",
                ),
                replaces(
                    &["I prefer to drink tea.", "Now I prefer to drink coffee."],
                    "drink tea or coffee",
                ),
                replaces(
                    &[
                        "I prefer traveling by train.",
                        "I'd rather travel by plane.",
                    ],
                    "travel by train or plane",
                ),
                replaces(
                    &["I prefer texting.", "I'd rather get a phone call."],
                    "texting or a phone call",
                ),
                replaces(
                    &["I prefer hiking.", "Lately I prefer swimming."],
                    "hiking or swimming",
                ),
                replaces(
                    &["I prefer lattes.", "My go-to drink is now a flat white."],
                    "latte or flat white drink",
                ),
                replaces(
                    &["I prefer cycling.", "These days I'd rather go running."],
                    "cycling or running",
                ),
                replaces(
                    &[
                        "I prefer tea.",
                        "Honestly, coffee is my drink of choice now.",
                    ],
                    "tea or coffee",
                ),
                replaces(
                    &["I prefer the beach.", "Nowadays I prefer the mountains."],
                    "beach or mountains",
                ),
            ],
        ),
        family(
            "favorite_and_prefer",
            false,
            vec![
                replaces(
                    &["My favorite drink is tea.", "I prefer coffee."],
                    "tea or coffee",
                ),
                replaces(
                    &["I prefer coffee.", "My favorite drink is tea."],
                    "coffee or tea",
                ),
                replaces(
                    &["My favourite season is spring.", "I prefer autumn."],
                    "spring or autumn season",
                ),
                replaces(
                    &["My preferred seat is the aisle.", "I prefer window seats."],
                    "aisle or window seat",
                ),
                replaces(
                    &["My go-to drink is lemonade.", "I'd rather have iced tea."],
                    "lemonade or iced tea",
                ),
                replaces(
                    &["My favorite music is jazz.", "I prefer hip hop."],
                    "jazz or hip hop",
                ),
                replaces(
                    &["My favorite sport is tennis.", "I prefer golf."],
                    "tennis or golf",
                ),
                replaces(
                    &["My favorite animal is the horse.", "I prefer rabbits."],
                    "horse or rabbits",
                ),
            ],
        ),
        family(
            "reschedule_moved",
            false,
            vec![
                replaces(
                    &[
                        "My dentist appointment is on March 3.",
                        "My dentist appointment moved to March 10.",
                    ],
                    "dentist appointment March",
                ),
                replaces(
                    &[
                        "My job interview is on Thursday.",
                        "My job interview was moved to Friday.",
                    ],
                    "job interview Thursday Friday",
                ),
                replaces(
                    &[
                        "My flight to Rome is on June 2.",
                        "My flight to Rome has been moved to June 4.",
                    ],
                    "flight to Rome June",
                ),
                replaces(
                    &[
                        "My haircut is on Saturday.",
                        "My haircut got moved to Sunday.",
                    ],
                    "haircut Saturday Sunday",
                ),
                replaces(
                    &[
                        "My yoga class is on Tuesday.",
                        "My yoga class was moved to Wednesday.",
                    ],
                    "yoga class Tuesday Wednesday",
                ),
                replaces(
                    &[
                        "My team meeting is on Monday.",
                        "My team meeting has moved to Tuesday.",
                    ],
                    "team meeting Monday Tuesday",
                ),
                replaces(
                    &[
                        "My doctor's appointment is on April 8.",
                        "My doctor's appointment moved to April 15.",
                    ],
                    "doctor appointment April",
                ),
                replaces(
                    &[
                        "My piano lesson is on Wednesday.",
                        "My piano lesson was shifted to Thursday.",
                    ],
                    "piano lesson Wednesday Thursday",
                ),
                replaces(
                    &[
                        "My parent-teacher meeting is on May 5.",
                        "My parent-teacher meeting was moved to May 12.",
                    ],
                    "parent-teacher meeting May",
                ),
                replaces(
                    &[
                        "My exam is on January 20.",
                        "My exam was moved to January 27.",
                    ],
                    "exam January",
                ),
                replaces(
                    &[
                        "My car inspection is on the 14th.",
                        "My car inspection was moved to the 21st.",
                    ],
                    "car inspection 14th 21st",
                ),
                replaces(
                    &[
                        "My dinner reservation is on Friday.",
                        "My dinner reservation was moved to Saturday.",
                    ],
                    "dinner reservation Friday Saturday",
                ),
                replaces(
                    &[
                        "My dentist appointment is on March 3.",
                        "The dentist moved my appointment to March 10.",
                    ],
                    "dentist appointment March",
                ),
                replaces(
                    &[
                        "My eye exam is on Monday.",
                        "My eye exam got bumped to Thursday.",
                    ],
                    "eye exam Monday Thursday",
                ),
            ],
        ),
        family(
            "reschedule_phrasings",
            false,
            vec![
                replaces(
                    &[
                        "I have a dentist appointment on March 3.",
                        "I rescheduled my dentist appointment to March 12.",
                    ],
                    "dentist appointment March",
                ),
                replaces(
                    &[
                        "I have a job interview on Monday.",
                        "The company postponed my job interview until Wednesday.",
                    ],
                    "job interview Monday Wednesday",
                ),
                replaces(
                    &[
                        "My flight is on Saturday.",
                        "They pushed my flight back to Sunday.",
                    ],
                    "flight Saturday Sunday",
                ),
                replaces(
                    &[
                        "My check-up is on May 2.",
                        "My check-up was postponed until May 9.",
                    ],
                    "check-up May",
                ),
                replaces(
                    &[
                        "My hair appointment is on Friday.",
                        "My hair appointment was brought forward to Wednesday.",
                    ],
                    "hair appointment Friday Wednesday",
                ),
                replaces(
                    &[
                        "I have a meeting with Priya on Tuesday.",
                        "My meeting with Priya is now on Thursday.",
                    ],
                    "meeting with Priya Tuesday Thursday",
                ),
                replaces(
                    &[
                        "I've got a vet appointment on June 10.",
                        "We moved the vet appointment to June 14.",
                    ],
                    "vet appointment June",
                ),
                replaces(
                    &[
                        "My dentist appointment is on March 3.",
                        "My dentist appointment was cancelled.",
                    ],
                    "dentist appointment March cancelled",
                ),
                replaces(
                    &["My concert is on Saturday.", "The concert was called off."],
                    "concert Saturday called off",
                ),
                replaces(
                    &[
                        "My physio session is on Monday.",
                        "My physio session has been rescheduled for Friday.",
                    ],
                    "physio session Monday Friday",
                ),
                replaces(
                    &[
                        "My dinner with Sam is on Friday.",
                        "My dinner with Sam got pushed to Saturday.",
                    ],
                    "dinner with Sam Friday Saturday",
                ),
                replaces(
                    &[
                        "I have a driving test on April 3.",
                        "My driving test was delayed to April 17.",
                    ],
                    "driving test April",
                ),
                replaces(
                    &[
                        "I have a haircut on Friday.",
                        "My haircut is now on Monday instead.",
                    ],
                    "haircut Friday Monday",
                ),
                replaces(
                    &[
                        "My book club meeting is on the 5th.",
                        "We pushed the book club meeting to the 12th.",
                    ],
                    "book club meeting",
                ),
            ],
        ),
        family(
            "override_for_a_while",
            false,
            vec![
                replaces(
                    &[
                        "I live in Berlin.",
                        "For the next two weeks I'm staying in Paris.",
                    ],
                    "Berlin or Paris",
                ),
                replaces(
                    &[
                        "I live in Lisbon.",
                        "I'm staying in Madrid for the next 10 days.",
                    ],
                    "Lisbon or Madrid",
                ),
                replaces(
                    &[
                        "I live in Toronto.",
                        "For the next month I'm living in Vancouver.",
                    ],
                    "Toronto or Vancouver",
                ),
                replaces(
                    &["I live in Oslo.", "I'm in Bergen for a week."],
                    "Oslo or Bergen",
                ),
                replaces(
                    &[
                        "I'm based in Chicago.",
                        "For the next three days I'm in Denver.",
                    ],
                    "Chicago or Denver",
                ),
                replaces(
                    &[
                        "I live in Dublin.",
                        "I'll be in Cork for the next five days.",
                    ],
                    "Dublin or Cork",
                ),
                replaces(
                    &[
                        "I live in Seoul.",
                        "I'm visiting Busan for a couple of weeks.",
                    ],
                    "Seoul or Busan",
                ),
                replaces(
                    &[
                        "We live in Austin.",
                        "For the next two months I'm staying in Boston.",
                    ],
                    "Austin or Boston",
                ),
                replaces(
                    &[
                        "I live in Melbourne.",
                        "I'm going to be in Sydney for the next 4 days.",
                    ],
                    "Melbourne or Sydney",
                ),
                replaces(
                    &[
                        "I live in Zurich.",
                        "I'm working from Geneva for the next two weeks.",
                    ],
                    "Zurich or Geneva",
                ),
                replaces(
                    &[
                        "I moved to Prague.",
                        "For the next week I'm staying in Vienna.",
                    ],
                    "Prague or Vienna",
                ),
                replaces(
                    &["I live in Kyoto.", "I'm away in Osaka for three days."],
                    "Kyoto or Osaka",
                ),
                replaces(
                    &[
                        "I live in Paris.",
                        "I'm spending the next two weeks in Nice.",
                    ],
                    "Paris or Nice",
                ),
                replaces(
                    &["I live in Madrid.", "This week I'm in Barcelona."],
                    "Madrid or Barcelona",
                ),
            ],
        ),
        family(
            "override_until",
            false,
            vec![
                replaces(
                    &["I live in Berlin.", "I'm staying in Hamburg until Friday."],
                    "Berlin or Hamburg",
                ),
                replaces(
                    &["I live in Rome.", "Until Sunday I'm in Florence."],
                    "Rome or Florence",
                ),
                replaces(
                    &["I live in Porto.", "I'm living in Faro until next Friday."],
                    "Porto or Faro",
                ),
                replaces(
                    &["I live in Madrid.", "I'm in Seville until Saturday."],
                    "Madrid or Seville",
                ),
                replaces(
                    &[
                        "I live in Amsterdam.",
                        "I'm staying at a friend's place in Utrecht until Tuesday.",
                    ],
                    "Amsterdam or Utrecht",
                ),
                replaces(
                    &["I live in Warsaw.", "Until Thursday I'll be in Krakow."],
                    "Warsaw or Krakow",
                ),
                replaces(
                    &["I live in Athens.", "I'm in Heraklion until Monday."],
                    "Athens or Heraklion",
                ),
                replaces(
                    &[
                        "I live in Nairobi.",
                        "I'm visiting Mombasa until next Tuesday.",
                    ],
                    "Nairobi or Mombasa",
                ),
                replaces(
                    &["I live in Lima.", "I'm in Cusco till Saturday."],
                    "Lima or Cusco",
                ),
                replaces(
                    &["I live in Manchester.", "Till Friday I'm staying in Leeds."],
                    "Manchester or Leeds",
                ),
                replaces(
                    &[
                        "I live in Denver.",
                        "I'm working from Boulder until Wednesday.",
                    ],
                    "Denver or Boulder",
                ),
                replaces(
                    &[
                        "I live in Quito.",
                        "I'm temporarily staying in Cuenca until Sunday.",
                    ],
                    "Quito or Cuenca",
                ),
                replaces(
                    &[
                        "I live in Bristol.",
                        "I'm at my parents' place in Bath until Sunday.",
                    ],
                    "Bristol or Bath",
                ),
            ],
        ),
        family(
            "override_other_attributes",
            false,
            vec![
                replaces(
                    &["I'm vegetarian.", "For the next three days I'm vegan."],
                    "vegetarian or vegan",
                ),
                replaces(
                    &["I'm a pescatarian.", "I'm vegan for the next two weeks."],
                    "pescatarian or vegan",
                ),
                replaces(
                    &["I work at Acme.", "I'm working at Globex until Friday."],
                    "work at Acme or Globex",
                ),
                replaces(
                    &[
                        "I work for Initech.",
                        "For the next month I'm working at Hooli.",
                    ],
                    "work for Initech or Hooli",
                ),
                replaces(
                    &[
                        "My phone number is 555-0101.",
                        "Until Friday my phone number is 555-0199.",
                    ],
                    "phone number",
                ),
                replaces(
                    &[
                        "My address is 12 Oak Street.",
                        "For the next two weeks my address is 4 Elm Road.",
                    ],
                    "address Oak Street Elm Road",
                ),
                replaces(
                    &[
                        "My email is ana@example.com.",
                        "For the next week my email is ana.temp@example.com.",
                    ],
                    "email address",
                ),
                replaces(
                    &["I'm a vegan.", "I'm vegetarian until Sunday."],
                    "vegan or vegetarian",
                ),
            ],
        ),
        Family {
            name: "override_expires",
            control: false,
            clock: true,
            probes: vec![
                expires(
                    &[
                        "I live in Berlin.",
                        "For the next two weeks I'm staying in Paris.",
                    ],
                    "Berlin or Paris",
                    15,
                ),
                expires(
                    &["I live in Lisbon.", "I'm in Porto for the next 3 days."],
                    "Lisbon or Porto",
                    4,
                ),
                expires(
                    &["I'm vegetarian.", "For the next 2 days I'm vegan."],
                    "vegetarian or vegan",
                    3,
                ),
                expires(
                    &[
                        "I work at Acme.",
                        "I'm working at Globex for the next week.",
                    ],
                    "Acme or Globex",
                    8,
                ),
                expires(
                    &["I live in Oslo.", "I'll be in Tromso for 5 days."],
                    "Oslo or Tromso",
                    6,
                ),
                expires(
                    &[
                        "My phone number is 555-0101.",
                        "For the next 4 days my phone number is 555-0199.",
                    ],
                    "phone number",
                    5,
                ),
                expires(
                    &["I live in Rome.", "I'm staying in Naples for a week."],
                    "Rome or Naples",
                    8,
                ),
                expires(
                    &["I live in Austin.", "For the next month I'm in Denver."],
                    "Austin or Denver",
                    32,
                ),
            ],
        },
        family(
            "three_statements",
            false,
            vec![
                with(
                    &["I prefer tea.", "I prefer coffee.", "I prefer water."],
                    "tea coffee or water",
                    Check {
                        outcome: "OON",
                        pairs: &[(1, 0), (2, 1)],
                    },
                ),
                with(
                    &[
                        "My dentist appointment is on March 3.",
                        "My dentist appointment moved to March 10.",
                        "My dentist appointment was moved again to March 17.",
                    ],
                    "dentist appointment March",
                    Check {
                        outcome: "OON",
                        pairs: &[(1, 0), (2, 1)],
                    },
                ),
                with(
                    &[
                        "I live in Berlin.",
                        "For the next two weeks I'm staying in Paris.",
                        "I moved to Madrid.",
                    ],
                    "Berlin Paris or Madrid",
                    Check {
                        outcome: "OON",
                        pairs: &[(2, 1), (2, 0)],
                    },
                ),
                with(
                    &[
                        "My favorite color is blue.",
                        "My favorite color is green.",
                        "My favorite color is red.",
                    ],
                    "favorite color blue green red",
                    Check {
                        outcome: "OON",
                        pairs: &[(1, 0), (2, 1)],
                    },
                ),
                with(
                    &["I work at Acme.", "I work at Globex.", "I work at Initech."],
                    "work at Acme Globex Initech",
                    Check {
                        outcome: "OON",
                        pairs: &[(1, 0), (2, 1)],
                    },
                ),
                with(
                    &["I prefer tea.", "I like cake.", "I prefer coffee."],
                    "tea cake coffee",
                    Check {
                        outcome: "ONN",
                        pairs: &[(2, 0)],
                    },
                ),
                with(
                    &[
                        "My flight is on Friday.",
                        "My flight was moved to Saturday.",
                        "My flight was cancelled.",
                    ],
                    "flight Friday Saturday cancelled",
                    Check {
                        outcome: "OON",
                        pairs: &[(1, 0), (2, 1)],
                    },
                ),
                with(
                    &[
                        "I live in Lisbon.",
                        "I'm staying in Paris until Friday.",
                        "I'm staying in Lyon for the next two weeks.",
                    ],
                    "Lisbon Paris or Lyon",
                    Check {
                        outcome: "OON",
                        pairs: &[(2, 1), (2, 0)],
                    },
                ),
                with(
                    &["I'm vegetarian.", "I'm vegan.", "I'm pescatarian."],
                    "vegetarian vegan pescatarian",
                    Check {
                        outcome: "OON",
                        pairs: &[(1, 0), (2, 1)],
                    },
                ),
                with(
                    &[
                        "I like jazz.",
                        "My favorite drink is tea.",
                        "I don't like jazz.",
                    ],
                    "jazz tea",
                    Check {
                        outcome: "ONN",
                        pairs: &[(2, 0)],
                    },
                ),
            ],
        ),
        family(
            "classic_supersession",
            false,
            vec![
                replaces(
                    &[
                        "My favorite color is blue.",
                        "My favourite colour is purple.",
                    ],
                    "favorite color blue purple",
                ),
                replaces(
                    &["I live in Lisbon.", "I moved to Porto."],
                    "Lisbon or Porto",
                ),
                replaces(
                    &["I work at Acme.", "I got a new job at Globex."],
                    "job at Acme or Globex",
                ),
                replaces(
                    &["I'm a teacher.", "I work as a nurse now."],
                    "teacher or nurse",
                ),
                replaces(
                    &["I like coffee.", "I don't like coffee anymore."],
                    "coffee",
                ),
                replaces(
                    &["I'm vegetarian.", "I'm not vegetarian anymore."],
                    "vegetarian",
                ),
                replaces(&["My name is Ana.", "Call me Annie."], "name Ana Annie"),
                replaces(
                    &["I'm 33 years old.", "I turned 34."],
                    "age 33 34 years old",
                ),
                replaces(
                    &["I prefer tea over coffee.", "I prefer coffee to tea."],
                    "tea over coffee",
                ),
                replaces(&["I'm single.", "I'm engaged."], "single or engaged"),
                replaces(
                    &[
                        "My phone number is 555-0101.",
                        "My phone number is 555-0144.",
                    ],
                    "phone number",
                ),
                replaces(
                    &["I'm a morning person.", "I'm not a morning person."],
                    "morning person",
                ),
            ],
        ),
        family(
            "control_two_pets",
            true,
            vec![
                both(
                    &["I have a dog named Rex.", "I have a cat named Luna."],
                    "dog cat Rex Luna",
                ),
                both(
                    &["My dog's name is Rex.", "My cat's name is Luna."],
                    "dog cat name",
                ),
                both(
                    &[
                        "I have a parrot called Kiwi.",
                        "I have a goldfish called Bubbles.",
                    ],
                    "parrot goldfish",
                ),
                both(
                    &["We adopted a puppy.", "We also have an old cat."],
                    "puppy cat",
                ),
                both(
                    &["My dog is a beagle.", "My cat is a Siamese."],
                    "dog beagle cat Siamese",
                ),
                both(
                    &["My dog Max loves the beach.", "My cat Nala sleeps all day."],
                    "dog Max cat Nala",
                ),
                both(
                    &["I have two dogs.", "I have a hamster too."],
                    "dogs hamster",
                ),
                both(
                    &[
                        "My rabbit is called Clover.",
                        "My guinea pig is called Pepper.",
                    ],
                    "rabbit guinea pig",
                ),
                both(
                    &["I love my dog Rex.", "I love my cat Luna."],
                    "dog Rex cat Luna",
                ),
                both(&["Rex is my dog.", "Luna is my cat."], "Rex dog Luna cat"),
            ],
        ),
        family(
            "control_two_likes",
            true,
            vec![
                both(&["I like tea.", "I like coffee."], "tea coffee"),
                both(&["I love hiking.", "I enjoy swimming."], "hiking swimming"),
                both(&["I like jazz.", "I love rock music."], "jazz rock music"),
                both(
                    &["I prefer tea.", "I prefer window seats."],
                    "tea window seats",
                ),
                both(
                    &["I prefer dark mode.", "I prefer summer."],
                    "dark mode summer",
                ),
                both(
                    &["I'm a big fan of football.", "I'm into chess."],
                    "football chess",
                ),
                both(&["I love pizza.", "I adore sushi."], "pizza sushi"),
                both(
                    &["I prefer quiet cafes.", "I prefer small bookshops."],
                    "quiet cafes small bookshops",
                ),
                both(
                    &["My favorite color is blue.", "My favorite fruit is mango."],
                    "favorite color fruit",
                ),
                both(&["I like cats.", "I like dogs."], "cats dogs"),
                both(&["I enjoy cooking.", "I enjoy baking."], "cooking baking"),
                both(&["I prefer email.", "I prefer cash."], "email cash"),
                both(
                    &["I prefer tea.", "My sister prefers coffee."],
                    "tea coffee",
                ),
            ],
        ),
        family(
            "control_dated_events",
            true,
            vec![
                both(
                    &[
                        "I have a dentist appointment on March 3.",
                        "I have a job interview on March 10.",
                    ],
                    "dentist appointment job interview March",
                ),
                both(
                    &["Yesterday I ran 10 km.", "Last week I went to Paris."],
                    "ran 10 km Paris",
                ),
                both(
                    &[
                        "My flight is on Friday.",
                        "My dentist appointment is on Friday.",
                    ],
                    "flight dentist appointment Friday",
                ),
                both(
                    &[
                        "I have a meeting with Bob on Monday.",
                        "I have a meeting with Alice on Monday.",
                    ],
                    "meeting Bob Alice Monday",
                ),
                both(
                    &[
                        "My yoga class is on Tuesday.",
                        "My piano lesson is on Tuesday.",
                    ],
                    "yoga class piano lesson Tuesday",
                ),
                both(
                    &[
                        "Last month I visited my parents.",
                        "Two days ago I started a new book.",
                    ],
                    "visited my parents started a new book",
                ),
                both(
                    &[
                        "My haircut is on Saturday.",
                        "My sister's wedding is on Saturday.",
                    ],
                    "haircut wedding Saturday",
                ),
                both(
                    &[
                        "I have a dentist appointment on March 3.",
                        "I have another dentist appointment on March 10.",
                    ],
                    "dentist appointment March",
                ),
                both(
                    &[
                        "On Monday I had a dentist appointment.",
                        "I have a dentist appointment on March 3.",
                    ],
                    "dentist appointment Monday March",
                ),
                both(
                    &["My exam is on June 5.", "My graduation is on July 1."],
                    "exam graduation June July",
                ),
                both(
                    &[
                        "My team meeting is on Wednesday.",
                        "My client call is on Wednesday.",
                    ],
                    "team meeting client call Wednesday",
                ),
                both(
                    &[
                        "I have a concert on Friday.",
                        "I have a football match on Saturday.",
                    ],
                    "concert football match",
                ),
                both(
                    &[
                        "I have a dentist appointment on March 3.",
                        "My sister has a dentist appointment on March 10.",
                    ],
                    "dentist appointment March",
                ),
            ],
        ),
        family(
            "control_questions_and_small_talk",
            true,
            vec![
                with(
                    &["I prefer tea.", "Do you prefer coffee?"],
                    "tea coffee",
                    Check {
                        outcome: "N-",
                        pairs: &[],
                    },
                ),
                with(
                    &["I live in Berlin.", "Do I still live in Berlin?", "Thanks!"],
                    "live in Berlin",
                    Check {
                        outcome: "N--",
                        pairs: &[],
                    },
                ),
                with(
                    &[
                        "My dentist appointment is on March 3.",
                        "Was my dentist appointment moved to March 10?",
                    ],
                    "dentist appointment March",
                    Check {
                        outcome: "N-",
                        pairs: &[],
                    },
                ),
                with(
                    &["I live in Berlin.", "Should I stay in Paris for two weeks?"],
                    "Berlin Paris",
                    Check {
                        outcome: "N-",
                        pairs: &[],
                    },
                ),
                with(
                    &[
                        "My favorite color is blue.",
                        "What's your favorite color?",
                        "ok",
                    ],
                    "favorite color blue",
                    Check {
                        outcome: "N--",
                        pairs: &[],
                    },
                ),
                with(
                    &["I work at Acme.", "Hi!", "Thank you so much."],
                    "work at Acme",
                    Check {
                        outcome: "N--",
                        pairs: &[],
                    },
                ),
                with(
                    &["I prefer window seats.", "Would you prefer an aisle seat?"],
                    "window aisle seat",
                    Check {
                        outcome: "N-",
                        pairs: &[],
                    },
                ),
                with(
                    &["I'm vegetarian.", "Are you vegan?"],
                    "vegetarian vegan",
                    Check {
                        outcome: "N-",
                        pairs: &[],
                    },
                ),
                with(
                    &[
                        "My flight is on Friday.",
                        "Can my flight be moved to Saturday?",
                    ],
                    "flight Friday Saturday",
                    Check {
                        outcome: "N-",
                        pairs: &[],
                    },
                ),
                with(
                    &["I like coffee.", "Sounds good!", "See you later."],
                    "coffee",
                    Check {
                        outcome: "N--",
                        pairs: &[],
                    },
                ),
                with(
                    &["I live in Lisbon.", "Where do you live?"],
                    "live Lisbon",
                    Check {
                        outcome: "N-",
                        pairs: &[],
                    },
                ),
                with(
                    &["I prefer tea.", "Which do you prefer, tea or coffee?"],
                    "tea or coffee",
                    Check {
                        outcome: "N-",
                        pairs: &[],
                    },
                ),
            ],
        ),
        family(
            "control_unrelated_slots",
            true,
            vec![
                both(
                    &["My favorite color is blue.", "My favorite drink is tea."],
                    "favorite color drink",
                ),
                both(&["I live in Berlin.", "I work at Acme."], "Berlin Acme"),
                both(&["I live in Berlin.", "I'm in Paris."], "Berlin Paris"),
                both(&["I'm a nurse.", "I'm vegetarian."], "nurse vegetarian"),
                both(
                    &["I'm allergic to peanuts.", "I'm allergic to shellfish."],
                    "allergic peanuts shellfish",
                ),
                both(&["I prefer tea.", "I like coffee."], "tea coffee"),
                both(
                    &["My sister's name is Ana.", "My brother's name is Luis."],
                    "sister brother name",
                ),
                both(&["I'm tired.", "I'm a night owl."], "tired night owl"),
                both(
                    &["I moved to Berlin.", "My brother moved to Paris."],
                    "Berlin Paris",
                ),
            ],
        ),
    ]
}

/// One remembered statement: the memory it stored or found, if any.
struct Said {
    id: Option<String>,
    text: String,
    episode: bool,
}

fn remember(client: &Client, collection: &str, content: &str) -> Result<Said, String> {
    let response = client.post(
        &format!("/v1/memory/collections/{collection}/remember?sync=true"),
        &json!({ "content": content }),
    );
    let status = response.status().as_u16();
    let body = json_body(response)?;
    if status != 200 {
        return Err(format!("remember {content:?} answered {status}: {body}"));
    }
    let first = body["memories"]
        .as_array()
        .and_then(|memories| memories.first());
    Ok(Said {
        id: first.and_then(|memory| memory["id"].as_str().map(str::to_owned)),
        text: first
            .and_then(|memory| memory["text"].as_str())
            .unwrap_or_default()
            .to_owned(),
        episode: first.is_some_and(|memory| memory["type"] == json!("episode")),
    })
}

fn json_body(response: reqwest::blocking::Response) -> Result<Value, String> {
    let text = response.text().map_err(|error| error.to_string())?;
    serde_json::from_str(&text).map_err(|error| format!("{error}: {text}"))
}

fn get(client: &Client, path: &str) -> Result<Value, String> {
    let response = client.get(path);
    let status = response.status().as_u16();
    let body = json_body(response)?;
    if status != 200 {
        return Err(format!("GET {path} answered {status}: {body}"));
    }
    Ok(body)
}

/// Checks what search, contradictions and profile say about the statements.
fn verify(
    client: &Client,
    collection: &str,
    probe: &Probe,
    said: &[Said],
    check: &Check,
) -> Result<(), String> {
    let mut problems = Vec::new();
    let response = client.post(
        &format!("/v1/memory/collections/{collection}/search"),
        &json!({"query": probe.query, "mode": "hybrid", "min_score": 0.0, "limit": 20}),
    );
    let found = json_body(response)?;
    let found: BTreeSet<&str> = found["results"]
        .as_array()
        .ok_or_else(|| format!("search answered {found}"))?
        .iter()
        .filter_map(|result| result["id"].as_str())
        .collect();
    let profile = get(
        client,
        &format!("/v1/memory/collections/{collection}/profile"),
    )?;
    let lines: BTreeSet<&str> = profile["profile"]
        .as_str()
        .unwrap_or_default()
        .lines()
        .collect();
    for ((index, expected), said) in check.outcome.chars().enumerate().zip(said) {
        let statement = probe.statements[index];
        let line = format!("- {}", said.text);
        match (expected, &said.id) {
            ('-', None) => {}
            ('-', Some(_)) => problems.push(format!("{statement:?} stored a memory")),
            (_, None) => problems.push(format!("{statement:?} stored nothing")),
            ('N', Some(id)) => {
                if !found.contains(id.as_str()) {
                    problems.push(format!("search misses {statement:?}"));
                }
                if !said.episode && !lines.contains(line.as_str()) {
                    problems.push(format!("profile misses {statement:?}"));
                }
            }
            (_, Some(id)) => {
                if found.contains(id.as_str()) {
                    problems.push(format!("search still returns {statement:?}"));
                }
                if lines.contains(line.as_str()) {
                    problems.push(format!("profile still lists {statement:?}"));
                }
            }
        }
    }
    let pairs = get(
        client,
        &format!("/v1/memory/collections/{collection}/contradictions"),
    )?;
    let listed: BTreeSet<(String, String)> = pairs["contradictions"]
        .as_array()
        .ok_or_else(|| format!("contradictions answered {pairs}"))?
        .iter()
        .map(|pair| {
            (
                pair["current"]["id"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                pair["superseded"]["id"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect();
    let expected: BTreeSet<(String, String)> = check
        .pairs
        .iter()
        .filter_map(|(newer, older)| Some((said[*newer].id.clone()?, said[*older].id.clone()?)))
        .collect();
    if listed != expected {
        problems.push(format!(
            "contradictions list {} pair(s), expected {}",
            listed.len(),
            expected.len()
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

fn run(client: &Client, probe: &Probe, clock: Option<&ManualClock>) -> Result<(), String> {
    let collection = unique("probe");
    let mut said = Vec::new();
    for statement in probe.statements {
        said.push(remember(client, &collection, statement)?);
    }
    verify(client, &collection, probe, &said, &probe.check)?;
    if let Some((days, later)) = &probe.later {
        let clock = clock.ok_or("an expiring probe needs its own clock")?;
        clock.advance(Duration::days(*days));
        verify(client, &collection, probe, &said, later)
            .map_err(|problem| format!("after {days} days: {problem}"))?;
    }
    Ok(())
}

#[test]
fn probe_suite_passes_97_percent_with_no_control_failing() {
    let families = families();
    let total: usize = families.iter().map(|family| family.probes.len()).sum();
    assert!(
        total >= 150 && families.len() >= 12,
        "{total} sequences in {} families",
        families.len()
    );
    // (family, probe) -> failure; the families without a clock share the server and run
    // four at a time; the expiring ones move their own server's clock, one at a time.
    let failures: Mutex<HashMap<(usize, usize), String>> = Mutex::new(HashMap::new());
    let shared_work: Vec<(usize, usize)> = families
        .iter()
        .enumerate()
        .filter(|(_, family)| !family.clock)
        .flat_map(|(number, family)| (0..family.probes.len()).map(move |probe| (number, probe)))
        .collect();
    // A tenant (key) per family keeps each under the per-key rate limit.
    let clients: Vec<Client> = families.iter().map(|_| new_tenant()).collect();
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| loop {
                let Some(&(family, probe)) = shared_work.get(next.fetch_add(1, Ordering::SeqCst))
                else {
                    return;
                };
                if let Err(problem) = run(&clients[family], &families[family].probes[probe], None) {
                    failures
                        .lock()
                        .unwrap_or_else(|poisoned| poisoned.into_inner())
                        .insert((family, probe), problem);
                }
            });
        }
    });
    let clock = Arc::new(ManualClock::new());
    let server = start_in_process_with_clock(|_| {}, clock.clone());
    let timed = tenant_on(&server);
    for (number, family) in families
        .iter()
        .enumerate()
        .filter(|(_, family)| family.clock)
    {
        for (index, probe) in family.probes.iter().enumerate() {
            if let Err(problem) = run(&timed, probe, Some(&clock)) {
                failures
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .insert((number, index), problem);
            }
        }
    }

    let failures = failures
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut report = String::from("probe suite: family, passed / sequences, rate\n");
    let mut control_failures = 0;
    for (number, family) in families.iter().enumerate() {
        let failed = (0..family.probes.len())
            .filter(|index| failures.contains_key(&(number, *index)))
            .count();
        let passed = family.probes.len() - failed;
        if family.control {
            control_failures += failed;
        }
        let _ = writeln!(
            report,
            "  {:<34} {:>3} / {:<3} {:>6.1}%{}",
            family.name,
            passed,
            family.probes.len(),
            100.0 * passed as f64 / family.probes.len() as f64,
            if family.control { "  (control)" } else { "" }
        );
    }
    let passed = total - failures.len();
    let rate = passed as f64 / total as f64;
    let _ = writeln!(
        report,
        "  {:<34} {:>3} / {:<3} {:>6.1}%",
        "total",
        passed,
        total,
        100.0 * rate
    );
    let mut failed: Vec<_> = failures.iter().collect();
    failed.sort();
    for ((family, probe), problem) in failed {
        let family = &families[*family];
        let _ = writeln!(
            report,
            "  FAILED {} {:?}: {problem}",
            family.name, family.probes[*probe].statements
        );
    }
    println!("{report}");
    let _ = std::fs::write(
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("probe-report.txt"),
        &report,
    );
    assert_eq!(control_failures, 0, "a control failed\n{report}");
    assert!(rate >= 0.97, "pass rate below 97%\n{report}");
}
