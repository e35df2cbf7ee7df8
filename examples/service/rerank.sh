#!/bin/sh
# Call a running `rerankit serve` with curl: sh examples/service/rerank.sh [URL]
# On a service with keys, set RERANKIT_API_KEY to one of them (the client sends one key;
# the server reads its keys from RERANKIT_API_KEYS, plural). Without it, no key is sent.
curl -s "${1:-http://127.0.0.1:8080}/v2/rerank" \
  -H 'Content-Type: application/json' \
  ${RERANKIT_API_KEY:+-H "Authorization: Bearer $RERANKIT_API_KEY"} \
  -d '{"model": "rerank-v3.5", "query": "how do vaccines train the immune system",
       "documents": ["Vaccine storage needs fridges between 2 and 8 degrees.",
                     "A vaccine trains the immune system: B and T cells learn to recognise the pathogen."],
       "top_n": 1}'
echo
