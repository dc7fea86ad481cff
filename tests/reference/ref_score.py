"""ref_score.py — the score semantics of docs/contract.md on token ids, over RefModel.

For item i the sequence is query + item_i (item_i + query with item_first);
lp[i][j] = log softmax(logits at the sequence's last position)[label_j] over
the whole vocabulary (an empty item therefore scores at the query's last
token); scores = exp(lp) without apply_softmax, the softmax of lp[i][.] over
the label set with it; items = [] gives [].

`expected_error` names the validation reason of docs/contract.md a token
request must be rejected with (or None), for requests that break exactly one
rule.
"""

import numpy as np


def sequence_of(query, item, item_first):
    return list(item) + list(query) if item_first else list(query) + list(item)


def label_softmax(lp_row):
    e = np.exp(lp_row - np.max(lp_row))
    return e / e.sum()


def score(model, query, items, label_ids, apply_softmax=False, item_first=False):
    """Returns {"scores": [[float]], "logprobs": [[float]]} in float64."""
    labels = np.asarray(label_ids, dtype=np.int64)
    scores, logprobs = [], []
    for item in items:
        seq = sequence_of(query, item, item_first)
        lp = model.logprobs(seq)[0][labels]
        logprobs.append(lp.tolist())
        scores.append((label_softmax(lp) if apply_softmax else np.exp(lp)).tolist())
    return {"scores": scores, "logprobs": logprobs}


def expected_error(query, items, label_ids, item_first, vocab_size, max_items,
                   max_sequence_tokens):
    """(reason, field prefix) for a token request breaking one rule, else None."""
    if len(label_ids) == 0:
        return ("empty_label_token_ids", "label_token_ids")
    fields = [("query", query)] + [(f"items[{i}]", it) for i, it in enumerate(items)]
    fields.append(("label_token_ids", label_ids))
    for name, ids in fields:
        if any(t < 0 for t in ids):
            return ("negative_token_id", name)
        if any(t >= vocab_size for t in ids):
            return ("token_id_exceeds_vocab", name)
    if len(items) > max_items:
        return ("too_many_items", "items")
    for i, item in enumerate(items):
        n = len(sequence_of(query, item, item_first))
        if n == 0:
            return ("empty_query", "query")
        if n > max_sequence_tokens:
            return ("sequence_too_long", f"items[{i}]")
    return None
