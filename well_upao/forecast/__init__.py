"""The forecast without labels (``well-upao forecast``): a user's trajectories predicted from their history, each
window's steps from the candidate its evidence trusts, with the expected error (``forecast.core``)."""

from well_upao.forecast.core import forecast
from well_upao.forecast.inputs import ForecastError
from well_upao.forecast.results import Forecast, ForecastRequest

__all__ = ["Forecast", "ForecastError", "ForecastRequest", "forecast"]
