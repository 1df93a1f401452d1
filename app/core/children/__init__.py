"""The children the job should have: each child made (pods, Services, the ConfigMap), and which
of them the decision asks for."""
