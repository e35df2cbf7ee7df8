"""Call a running `rerankit serve` with Cohere's SDK (pip install cohere):
``python examples/service/cohere_client.py [URL] [--key KEY]`` (default URL
http://127.0.0.1:8080). The key is --key, else $RERANKIT_API_KEY: one of the service's
keys (RERANKIT_API_KEYS where it runs); a service started without keys takes any."""

import argparse
import os
import sys

import cohere

parser = argparse.ArgumentParser(description="rerank two documents through the service")
parser.add_argument("url", nargs="?", default="http://127.0.0.1:8080")
parser.add_argument("--key", default=os.environ.get("RERANKIT_API_KEY"), help="an API key")
args = parser.parse_args()
# The SDK wants a key; a service started without keys accepts any non-empty one.
co = cohere.ClientV2(api_key=args.key or "any-non-empty-key", base_url=args.url)
try:
    response = co.rerank(
        model="rerank-v3.5",  # Cohere's model names reach the service's default pipeline
        query="how do vaccines train the immune system",
        documents=[
            "Vaccine storage needs fridges between 2 and 8 degrees.",
            "A vaccine trains the immune system: B and T cells learn to recognise the pathogen.",
        ],
        top_n=1,
    )
except cohere.UnauthorizedError:
    given = "the key given was refused" if args.key else "no key given"
    sys.exit(f"{args.url}: 401, {given}: pass --key KEY or set RERANKIT_API_KEY")
for r in response.results:
    print(r.index, round(r.relevance_score, 3))
