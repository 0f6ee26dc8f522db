"""AgentDojo (ETH Zurich; `pip install 'proctor[agentdojo]'`) inside proctor's gateway.

`proctor run agentdojo:banking --agent ...` runs a suite; the reference agents are
`proctor.bench.agentdojo:ground_truth` and `proctor.bench.agentdojo:obedient`. Importing
this package does not import AgentDojo: the first suite or agent run does.
"""

from proctor.bench.agentdojo.agents import ground_truth, obedient

__all__ = ["ground_truth", "obedient"]
