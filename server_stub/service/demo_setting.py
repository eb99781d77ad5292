"""The demo data's fixed setting: the clock, the seed, the session, the symbols and their
positions, the venues and strategies."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, time

DEMO_NOW = datetime(2025, 6, 30, 20, 0, tzinfo=UTC)
DEMO_SEED = 20250630
PNL_DAYS = 90
ORDER_DAYS = 30
STARTING_EQUITY = 1_000_000.0
DAEMON_VERSION = "1.8.3"
SESSION_OPEN = time(13, 30)
SESSION_SECONDS = int(6.5 * 3600)
FEE_PER_SHARE = 0.0035
MIN_FEE = 0.35
VENUES = ("NASDAQ", "NYSE", "ARCA", "IEX", "BATS")
STRATEGIES = ("mean_revert", "momentum", "pairs", "hedge")


@dataclass(frozen=True)
class DemoSymbol:
    symbol: str
    name: str
    asset_class: str
    exchange: str
    last_price: float
    annual_volatility: float
    max_position: int
    weight: float


SYMBOLS = (
    DemoSymbol("AAPL", "Apple Inc.", "equity", "NASDAQ", 205.17, 0.28, 1000, 0.25),
    DemoSymbol("MSFT", "Microsoft Corp.", "equity", "NASDAQ", 497.41, 0.24, 500, 0.2),
    DemoSymbol("NVDA", "NVIDIA Corp.", "equity", "NASDAQ", 157.99, 0.45, 250, 0.25),
    DemoSymbol("SPY", "SPDR S&P 500 ETF Trust", "etf", "NYSE Arca", 617.85, 0.16, 600, 0.2),
    DemoSymbol(
        "TLT", "iShares 20+ Year Treasury Bond ETF", "etf", "NASDAQ", 88.24, 0.14, 2000, 0.1
    ),
)

# symbol -> (signed quantity, days before now it was opened, avg price as a fraction of that close)
OPEN_POSITIONS = {
    "AAPL": (300, 19, 0.985),
    "MSFT": (120, 9, 1.0),
    "NVDA": (-200, 4, 1.012),
    "SPY": (150, 29, 0.997),
}

REJECT_REASONS = (
    "risk: max_order_notional would be exceeded",
    "risk: max_position would be exceeded",
    "broker: order price outside the limit-up/limit-down band",
    "broker: symbol temporarily halted",
)
