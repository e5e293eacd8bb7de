import Synchronization

/// How much a command prints besides its result, the same on every command (`-q`/`--quiet`, `-v`/`--verbose`,
/// Docs/CommandLine.md): quiet prints only the result and errors; the default adds progress and notes (status lines,
/// what was saved where); verbose adds details: a failure's underlying cause after its line (a library's own words,
/// which may name its types or errno values), and what a command logs per request (`serve`). Questions, and the
/// announcement that requests are approved unattended, are printed at every level.
public enum OutputLevel: Int, Sendable, Hashable, Comparable {
    case quiet
    case normal
    case verbose

    /// The level the flags ask for; `PASSKEY_VERBOSE=1` in `environment` asks for verbose unless `quiet`.
    public init(quiet: Bool, verbose: Bool, environment: [String: String] = [:]) {
        if quiet {
            self = .quiet
        } else if verbose || environment["PASSKEY_VERBOSE"] == "1" {
            self = .verbose
        } else {
            self = .normal
        }
    }

    /// Whether progress and notes are printed.
    public var showsProgress: Bool { self != .quiet }

    /// Whether details are printed: a failure's underlying cause, per-request logs.
    public var showsDetails: Bool { self == .verbose }

    public static func < (left: OutputLevel, right: OutputLevel) -> Bool { left.rawValue < right.rawValue }

    private static let storage = Atomic<Int>(OutputLevel.normal.rawValue)

    /// This process's level: set once, when the command's flags are parsed; read by every line of progress.
    public static var current: OutputLevel {
        get { OutputLevel(rawValue: storage.load(ordering: .relaxed)) ?? .normal }
        set { storage.store(newValue.rawValue, ordering: .relaxed) }
    }
}
