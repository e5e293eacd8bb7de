/// The exit statuses every `passkey` command uses, one table (`Docs/ExitStatus.md`). `passkey client`'s
/// DOMException statuses (10 to 17, `DOMExceptionName.exitStatus`) are the only others.
public enum ExitStatus {
    /// The command did its work (a check's answer is yes).
    public static let success: Int32 = 0
    /// The command could not do its work; for a check (`domains`, `inspect origin`), the answer is no.
    public static let failure: Int32 = 1
    /// A check could not be answered: the file, site or app ID given could not be read or is not one.
    public static let unanswered: Int32 = 2
    /// A check is pending: asked, and not answered yet (`domains check`).
    public static let pending: Int32 = 3
    /// What was asked for is not there (`password get` and `delete` of a shared web credential).
    public static let notFound: Int32 = 4
    /// The person said no at a prompt, or a prompt was needed and nobody could answer it.
    public static let declined: Int32 = 5
    /// The arguments are wrong: an unknown flag, a missing argument, a value that is not one (sysexits EX_USAGE).
    public static let usage: Int32 = 64
    /// The settings are wrong: the settings file, or a `PASSKEY_` variable (sysexits EX_CONFIG).
    public static let settings: Int32 = 78
    /// Ctrl-C (SIGINT) ended the command: 128 plus the signal's number, as a shell reports it.
    public static let interrupted: Int32 = 130
}
