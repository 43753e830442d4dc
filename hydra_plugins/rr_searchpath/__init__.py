"""Hydra search-path plugin of ``rr``: adds the config packages of rr plugins (entry-point group
``rr.configs``, see :mod:`rr.plugins`) to the search path of rr's apps.

Hydra finds it because it lives in the ``hydra_plugins`` namespace package (Hydra's documented
route for a library that brings configs). It acts only on rr's own configs: any other Hydra app in
the same environment sees its search path unchanged.
"""

from __future__ import annotations

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin


class RRSearchPathPlugin(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        from rr.config import PACKAGE_CONFIG_DIR, config_dir
        from rr.plugins import plugin_config_paths

        ours = {PACKAGE_CONFIG_DIR, config_dir()}
        if not any(element.path.removeprefix("file://") in ours for element in search_path.get_path()):
            return
        for path in plugin_config_paths():
            search_path.append(provider="rr-plugin", path=path)
