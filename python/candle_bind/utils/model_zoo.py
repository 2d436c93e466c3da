"""torch.utils.model_zoo: torch.hub's names under their old home (torchvision imports tqdm from here)."""

from ..hub import load_state_dict_from_url as load_url, tqdm  # noqa: F401
