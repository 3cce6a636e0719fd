//! Fuzzes the SQL frontend and executor: thousands of mutated and randomly assembled queries
//! must each end in a result or an error, never a panic.

use morsel::Session;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

const SEEDS: &[&str] = &[
    "SELECT name, age * 2 FROM 'tests/data/people.csv' WHERE age > 30 ORDER BY 2 DESC LIMIT 3",
    "SELECT city, count(*), sum(score) FROM 'tests/data/people.csv' GROUP BY city HAVING count(*) > 1",
    "SELECT p.name, o.amount FROM 'tests/data/people.csv' p LEFT JOIN 'tests/data/orders.csv' o ON p.id = o.person_id",
    "SELECT CASE WHEN age IS NULL THEN 'x' ELSE upper(name) END FROM 'tests/data/people.csv'",
    "SELECT joined + INTERVAL '3' MONTH, EXTRACT(YEAR FROM joined) FROM 'tests/data/people.csv' WHERE joined < '2021-01-01'",
    "SELECT DISTINCT city FROM 'tests/data/people.csv' UNION ALL SELECT status FROM 'tests/data/orders.csv'",
];

const TOKENS: &[&str] = &[
    "SELECT",
    "FROM",
    "WHERE",
    "GROUP BY",
    "ORDER BY",
    "HAVING",
    "LIMIT",
    "JOIN",
    "ON",
    "AND",
    "OR",
    "NOT",
    "NULL",
    "(",
    ")",
    ",",
    "*",
    "+",
    "-",
    "/",
    "//",
    "%",
    "=",
    "<",
    ">=",
    "<>",
    "||",
    "::",
    "1",
    "0",
    "-9223372036854775808",
    "2.5",
    "'x'",
    "''",
    "DATE '2024-02-29'",
    "INTERVAL '1' DAY",
    "name",
    "age",
    "score",
    "joined",
    "city",
    "p.id",
    "count(*)",
    "sum(age)",
    "avg(score)",
    "min(name)",
    "'tests/data/people.csv'",
    "'tests/data/orders.csv' o",
    "CASE WHEN",
    "THEN",
    "ELSE",
    "END",
    "IN",
    "BETWEEN",
    "LIKE '%a_'",
    "IS NULL",
    "CAST(",
    "AS INTEGER)",
    "DISTINCT",
];

/// One or two edits: character-level (delete, insert punctuation, swap) or word-level
/// (replace, drop or repeat a word), so the results range from broken to still valid.
fn mutate(rng: &mut Rng, s: &str) -> String {
    let mut words: Vec<String> = s.split(' ').map(str::to_string).collect();
    for _ in 0..1 + rng.below(2) {
        let w = rng.below(words.len());
        match rng.below(6) {
            0 => words[w] = rng.pick(TOKENS).to_string(),
            1 if words.len() > 1 => {
                words.remove(w);
            }
            2 => {
                let copy = words[w].clone();
                words.insert(w, copy);
            }
            3 => {
                let mut chars: Vec<char> = words[w].chars().collect();
                if !chars.is_empty() {
                    chars.remove(rng.below(chars.len()));
                }
                words[w] = chars.into_iter().collect();
            }
            4 => words[w].push("(),'*;-0x\"".chars().nth(rng.below(10)).unwrap_or(' ')),
            _ => {
                let other = rng.below(words.len());
                words.swap(w, other);
            }
        }
    }
    words.join(" ")
}

#[test]
fn no_query_panics() {
    let session = Session::with_threads(2);
    let mut rng = Rng(0xDEAD_BEEF_CAFE_F00D);
    let mut ok = 0;
    for i in 0..1500 {
        let sql = if i % 3 == 0 {
            (0..3 + rng.below(12))
                .map(|_| rng.pick(TOKENS))
                .collect::<Vec<_>>()
                .join(" ")
        } else {
            let seed = SEEDS[rng.below(SEEDS.len())];
            mutate(&mut rng, seed)
        };
        match session.execute(&sql) {
            Ok(_) => ok += 1,
            Err(e) if std::env::var("FUZZ_SHOW").is_ok() => println!("{sql}\n  -> {e}"),
            Err(_) => {}
        }
    }
    // Some mutations keep the query valid, so the executor is exercised too, not only the parser.
    assert!(ok > 40, "only {ok} fuzzed queries ran");
}
