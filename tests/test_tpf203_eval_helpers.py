"""TPF203: evaluation loops that reach their model through project code the value engine
follows (``project/forward_calls.py``, ``facts/training/eval_helpers.py``): an agent's method
called in a function named like evaluation (TD3's ``eval_policy`` running
``policy.select_action(state)``, whose body runs ``self.actor(state)``), and a helper handed
a model this function put in eval mode (HRNet's demo: ``box_model.eval()``, then
``get_person_detection_boxes(box_model, img)`` in the frame loop). The look-alikes: the
helper runs the model under ``no_grad`` or is decorated with it, the method trains, the
method runs no torch module, the model handed over is in train mode."""

from __future__ import annotations

from pathlib import Path

from test_tensors_project import _findings, _marked

_AGENT = """
    import torch
    import torch.nn as nn

    class Actor(nn.Module):
        def __init__(self):
            super().__init__()
            self.l1 = nn.Linear(3, 2)

        def forward(self, state):
            return self.l1(state)

    class Agent:
        def __init__(self):
            self.actor = Actor().cuda()
            self.actor_optimizer = torch.optim.Adam(self.actor.parameters())

        def select_action(self, state):
            state = torch.as_tensor(state).cuda()
            return self.actor(state).cpu().numpy()

        def update(self, state):
            loss = self.actor(state).sum()
            self.actor_optimizer.zero_grad()
            loss.backward()
            self.actor_optimizer.step()

    class RandomAgent:
        def select_action(self, state):
            return state
"""
_HELPERS = """
    import torch

    def get_boxes(model, img):
        pred = model(img)
        return pred

    def get_poses(pose_model, img):
        with torch.no_grad():
            return pose_model(img)

    @torch.no_grad()
    def get_masks(mask_model, img):
        return mask_model(img)
"""

EVALUATES = {
    "agent.py": _AGENT,
    "helpers.py": _HELPERS,
    "main.py": """
        import torch
        from agent import Agent

        def eval_policy(policy, env, episodes=10):
            total = 0.0
            for _ in range(episodes):  #!
                state, done = env.reset(), False
                while not done:
                    action = policy.select_action(state)
                    state, reward, done = env.step(action)
                    total += reward
            return total

        def main(env):
            policy = Agent()
            eval_policy(policy, env)
    """,
    "demo.py": """
        import torch
        import torchvision
        from helpers import get_boxes

        def main(video):
            box_model = torchvision.models.resnet18().cuda()
            box_model.eval()
            while True:  #!
                img = video.read()
                boxes = get_boxes(box_model, img)
    """,
}

LOOKALIKES = {
    "agent.py": _AGENT,
    "helpers.py": _HELPERS,
    "main.py": """
        import torch
        from agent import Agent, RandomAgent

        def eval_policy(policy, env, episodes=10):
            for _ in range(episodes):
                action = policy.select_action(env.reset())

        def evaluate_updates(policy, states):
            for state in states:
                policy.update(state)

        def main(env):
            eval_policy(RandomAgent(), env)
            evaluate_updates(Agent(), [env.reset()])
    """,
    "demo.py": """
        import torch
        import torchvision
        from helpers import get_boxes, get_masks, get_poses

        def main(video):
            pose_model = torchvision.models.resnet18().cuda()
            pose_model.eval()
            for img in video:
                poses = get_poses(pose_model, img)
                masks = get_masks(pose_model, img)

        def train_view(video):
            box_model = torchvision.models.resnet18().cuda()
            box_model.train()
            for img in video:
                boxes = get_boxes(box_model, img)
    """,
}


def test_a_model_behind_an_agents_method_or_a_helper_is_evaluated(tmp_path: Path):
    assert _findings(tmp_path, EVALUATES, "TPF203") == _marked(EVALUATES)


def test_no_grad_helpers_training_methods_and_models_in_train_mode_stay_silent(tmp_path: Path):
    assert _findings(tmp_path, LOOKALIKES, "TPF203") == []
