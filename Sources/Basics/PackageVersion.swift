/// This program's version: what `passkey --version` and `passkey-relay --version` print, and what the
/// authenticator's getInfo reports as its firmware version.
public enum PackageVersion {
    public static let major = 0
    public static let minor = 1
    public static let patch = 0

    /// `major.minor.patch`.
    public static var text: String { "\(major).\(minor).\(patch)" }

    /// `major << 16 | minor << 8 | patch`: getInfo's firmwareVersion.
    public static var number: Int { major << 16 | minor << 8 | patch }
}
