/*
 * Comment text in the spirit of the TPC-H text grammar: sentences made of
 * noun phrases, verb phrases and prepositional phrases over small word
 * lists, ending in a terminator. The word lists are our own; like TPC-H's,
 * they are ordinary English words so that LIKE predicates over comments
 * ('%special%requests%') find realistic, skewed matches, and so that the
 * text compresses like real short notes do rather than like random bytes.
 */
#include "text.h"

#include <string.h>

#include "rng.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *const nouns[] = {
    "packages", "requests", "accounts", "deposits", "foxes", "ideas", "theodolites",
    "pinto beans", "instructions", "dependencies", "excuses", "platelets", "asymptotes",
    "courts", "dolphins", "multipliers", "sauternes", "warthogs", "frets", "dinos",
    "attainments", "somas", "patterns", "forges", "braids", "frays", "warhorses", "dugouts",
    "epitaphs", "pearls", "tithes", "waters", "orbits", "gifts", "sheaves", "depths",
    "sentiments", "decoys", "realms", "pains", "grouches", "escapades", "hockey players",
    "lanterns", "ledgers", "pallets", "invoices", "parcels", "crates", "manifests",
};
static const char *const verbs[] = {
    "sleep", "wake", "are", "cajole", "haggle", "nag", "use", "boost", "affix", "detect",
    "integrate", "maintain", "nod", "was", "lose", "sublate", "solve", "thrash", "promise",
    "engage", "hinder", "print", "x-ray", "breach", "eat", "grow", "impress", "mold", "poach",
    "serve", "run", "dazzle", "snooze", "doze", "unwind", "kindle", "play", "hang", "believe",
    "doubt", "wander", "ship", "sort", "stack",
};
static const char *const adjectives[] = {
    "furious", "sly", "careful", "blithe", "quick", "fluffy", "slow", "quiet", "ruthless",
    "thin", "close", "dogged", "daring", "brave", "stealthy", "permanent", "enticing", "idle",
    "busy", "regular", "final", "ironic", "even", "bold", "silent", "special", "pending",
    "express", "unusual", "ideal",
};
static const char *const adverbs[] = {
    "sometimes", "always", "never", "furiously", "slyly", "carefully", "blithely", "quickly",
    "fluffily", "slowly", "quietly", "ruthlessly", "thinly", "closely", "doggedly", "daringly",
    "bravely", "stealthily", "permanently", "enticingly", "idly", "busily", "regularly",
    "finally", "ironically", "evenly", "boldly", "silently",
};
static const char *const prepositions[] = {
    "about", "above", "according to", "across", "after", "against", "along", "alongside of",
    "among", "around", "at", "atop", "before", "behind", "beneath", "beside", "besides",
    "between", "beyond", "by", "despite", "during", "except", "for", "from", "in place of",
    "inside", "instead of", "into", "near", "of", "on", "outside", "over", "past", "since",
    "through", "throughout", "to", "toward", "under", "until", "up", "upon", "without", "with",
    "within",
};
static const char *const auxiliaries[] = {
    "do", "may", "might", "shall", "will", "would", "can", "could", "should", "ought to",
    "must", "will have to", "shall have to", "could have to", "should have to", "need to",
    "try to",
};
static const char *const terminators[] = {".", ";", ":", "?", "!", "--"};

struct text {
    char *buf;
    size_t len, cap;
    struct rng_seq rng;
};

static void put(struct text *t, const char *s) {
    size_t n = strlen(s);
    if (t->len + n >= t->cap) n = t->cap - 1 - t->len;
    memcpy(t->buf + t->len, s, n);
    t->len += n;
}

static void word(struct text *t, const char *const *list, size_t n) {
    if (t->len) put(t, " ");
    put(t, list[rng_range(rng_next(&t->rng), 0, (int64_t)n - 1)]);
}

static int64_t pick(struct text *t, int64_t lo, int64_t hi) {
    return rng_range(rng_next(&t->rng), lo, hi);
}

/* noun phrase: noun | adjective noun | adjective, adjective noun | adverb adjective noun */
static void noun_phrase(struct text *t) {
    switch (pick(t, 0, 3)) {
    case 0: break;
    case 1: word(t, adjectives, COUNT(adjectives)); break;
    case 2:
        word(t, adjectives, COUNT(adjectives));
        put(t, ",");
        word(t, adjectives, COUNT(adjectives));
        break;
    default:
        word(t, adverbs, COUNT(adverbs));
        word(t, adjectives, COUNT(adjectives));
        break;
    }
    word(t, nouns, COUNT(nouns));
}

/* verb phrase: verb | auxiliary verb | verb adverb | auxiliary verb adverb */
static void verb_phrase(struct text *t) {
    int64_t form = pick(t, 0, 3);
    if (form & 1) word(t, auxiliaries, COUNT(auxiliaries));
    word(t, verbs, COUNT(verbs));
    if (form & 2) word(t, adverbs, COUNT(adverbs));
}

static void prep_phrase(struct text *t) {
    word(t, prepositions, COUNT(prepositions));
    put(t, " the");
    noun_phrase(t);
}

static void sentence(struct text *t) {
    switch (pick(t, 0, 4)) {
    case 0: noun_phrase(t); verb_phrase(t); break;
    case 1: noun_phrase(t); verb_phrase(t); prep_phrase(t); break;
    case 2: noun_phrase(t); verb_phrase(t); noun_phrase(t); break;
    case 3: noun_phrase(t); prep_phrase(t); verb_phrase(t); noun_phrase(t); break;
    default: noun_phrase(t); prep_phrase(t); verb_phrase(t); prep_phrase(t); break;
    }
    put(t, terminators[pick(t, 0, (int64_t)COUNT(terminators) - 1)]);
}

size_t qvgen__text_generate(uint64_t seed, size_t len, char *buf, size_t cap) {
    char work[256];
    struct text t = {work, 0, sizeof work, {seed}};
    if (len >= cap) len = cap - 1;
    if (len > sizeof work / 2) len = sizeof work / 2;
    while (t.len <= len) sentence(&t);
    /* Cut to the exact length, as TPC-H does; a cut that would end on a
     * space takes the next character instead, so no value ends in blank. */
    memcpy(buf, work, len);
    if (len && buf[len - 1] == ' ') buf[len - 1] = work[len];
    buf[len] = 0;
    return len;
}
