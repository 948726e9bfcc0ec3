"""Parameter and input/output documentation shared by the sequence synthesizers (DP-Markov, DP-HistSeq)."""

__all__ = ["OUTPUT_DOC", "PARAMS_DOC"]

PARAMS_DOC = """
    epsilon : float or None, default=1.0
        Budget per cohort. ``None`` = exact counts, not private (logged as such).
    delta : float, default=1e-6
        Spent only on discovering the vocabulary / label categories when they are
        not given (and, with ``mechanism="gaussian"``, on converting zCDP).
    id_column, order_column : str, default="id", "order"
        Learner identifier and event time or position (any sortable type). Rows of
        a learner need not be contiguous nor sorted.
    event_columns : str or list of str, default="event"
        The event; several columns form one joint state (e.g. ``["skill", "correct"]``).
    label_column : str or None, default=None
        One outcome per learner. The event model is fitted per label (disjoint
        learners: parallel composition), so outcome groups keep their own dynamics.
    static_columns : str, list of str or None, default=None
        Other per-learner columns (e.g. ``gender``); synthesized jointly with the
        label through one noisy histogram (numeric ones binned into ``static_bins``).
    max_length : int, default=200
        Public contribution bound: each learner's first ``max_length`` events are used;
        longer sequences are truncated, without a warning (how many learners were
        truncated is a fact about the data; the model's budget record states the
        bound, and the noisy length histogram's last bin, exactly ``max_length``,
        is where they pile up). Synthetic lengths are at most ``max_length``;
        choose it from public knowledge (e.g. the course length).
    vocabulary : list, dict or None, default=None
        The public event vocabulary: a list of events (tuples, in ``event_columns``
        order, for several columns) or a dict ``{column: values}`` whose product is
        the state space. ``None``: discovered under DP by a partition selection
        in which each learner spreads a weight of L2 norm 1 over the distinct
        states they visit (see Privacy; at epsilon 1 a state needs a weight of
        about 130 under the pure default with the label's categories given, 270
        when they are estimated, 60-90 with ``mechanism="gaussian"``: about
        ``weight * sqrt(d)`` learners who visit ``d`` states each; a refusal
        names what would work); events not released are kept as one
        "unreleased" state, written as missing values on sample, and a warning
        says so when the noisy model counts of that state stand clear of their
        noise. With a public vocabulary, events outside it are an error (that
        names the columns, never the values).
    schema : TableSchema, dict, path or None, default=None
        Domain of the label and static columns. ``None``: estimated under DP with
        :func:`skdpsynth.privacy.estimate_schema` (static values it does not
        release become missing; learners whose label it does not release are
        left out, as the label is complete by contract, and counted in one more
        cell of the noisy group histogram: a warning says so when that count
        stands clear of its noise). A schema not confirmed public
        (``public=False``, e.g. from :func:`skdpsynth.infer_schema`) makes the
        release non-private (recorded in the budget log).
    mechanism : {"geometric", "gaussian"}, default="geometric"
        Integer Laplace noise (pure DP, L1 sensitivities) or discrete Gaussian
        noise (zCDP, L2 sensitivities; needs ``delta > 0``). Under ``"gaussian"``
        a discovered vocabulary and label/static domain are charged in zCDP and
        compose with the model (several times the rho their slice buys alone);
        the model's counts get noise of L2 sensitivity ``max_length``.
    domain_share : float or "auto", default="auto"
        Share of epsilon (and, under ``"gaussian"``, of delta) for the vocabulary
        and label/static domain when they are not given (first cohort only;
        unused when both are public), half each when both are; the model keeps
        what it would have after this slice. ``"auto"``: 0.2 under
        ``"geometric"`` (the domain is an (epsilon, delta) slice of its own),
        0.1 under ``"gaussian"`` (the domain composes in zCDP with the model,
        and 0.1 already buys it 18% of the cohort's rho). On OULAD AAA at
        epsilon 1 with the outcome codebook given, the pure default released
        89-97% of the activity types most learners use (three runs of five
        fits; 43-69% at 0.1).
    label_share : float, default=0.05
        Share of the remaining budget for the label/static histogram (when any).
    length_share : float, default=0.1
        Share of the remaining budget for the per-label length histograms.
    length_bins : int, default=20
        Public geometric length bins over ``1 .. max_length``.
    max_states_per_learner : int, default=10
        Vocabulary discovery: each learner counts for at most this many distinct states.
    static_bins : int, default=10
        Bins of numeric static columns.
    duplicate_order : {"error", "stable"}, default="error"
        Events of one learner with equal ``order_column`` values: an error, or kept
        in their row order (e.g. several clicks on one day).
    cohort_composition : {"parallel", "sequential"}, default="parallel"
        How ``partial_fit`` cohorts compose ("parallel": different learners).
    random_state : None, int or Generator, default=None
        Seeds sampling (and nothing else: the privacy noise is fresh OS entropy
        unless ``reproducible_noise=True``).
    reproducible_noise : bool, default=False
        Derive the privacy noise from random_state (tests and papers only: such
        a release is not publishable).
"""

OUTPUT_DOC = """
    Input and output
    ----------------
    ``fit(X)`` takes a long-format event table (one row per event). ``sample(n)``
    returns ``n`` synthetic learners (default ``n_estimate_``) in the same long
    format and column names: fresh ids ``0 .. n-1`` in ``id_column``, positions
    ``0 .. L-1`` in ``order_column`` (positions, not times), the events, the
    label and static columns repeated on each of a learner's rows. Release
    dtypes follow the input dtypes and the schema (e.g. an integer column that
    may hold the unreleased or missing cell is ``Int64``), never the draw.
    Columns with no role are an error (drop them first); rows may come in any
    order.
"""
