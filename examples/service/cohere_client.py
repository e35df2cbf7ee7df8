"""Call a running `rerankit serve` with Cohere's SDK (pip install cohere):
``python examples/service/cohere_client.py [URL]`` (default http://127.0.0.1:8080)."""

import sys

import cohere

url = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8080"
# The SDK wants a key; a service started without keys accepts any non-empty one.
co = cohere.ClientV2(api_key="any-non-empty-key", base_url=url)
response = co.rerank(
    model="rerank-v3.5",  # Cohere's model names reach the service's default pipeline
    query="how do vaccines train the immune system",
    documents=[
        "Vaccine storage needs fridges between 2 and 8 degrees.",
        "A vaccine trains the immune system: B and T cells learn to recognise the pathogen.",
    ],
    top_n=1,
)
for r in response.results:
    print(r.index, round(r.relevance_score, 3))
