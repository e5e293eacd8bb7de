import Foundation

/// Every file the passkey provider keeps, named in one place.
///
/// The store is the anchor: the other files sit beside it and are named after it or after its directory, so that
/// `--store PATH` (or `PASSKEY_STORE`) moves all of them together, and a copy of the directory is a copy of the
/// provider. No other type works out where one of these files is; each takes the URL this registry gives it.
///
/// The settings file is the one exception: it says where the store is, so it lives in the configuration directory
/// (`PasskeyFiles.settingsFile(environment:)`).
///
/// | file | name (for the default store `passkeys.sqlite`) | what it holds |
/// |---|---|---|
/// | `store` | `passkeys.sqlite` | the encrypted SQLite store: passkeys, passwords, PIN and settings |
/// | `lock` | `passkeys.sqlite.lock` | the claim of the one authenticator process on the store |
/// | `identityIndex` | `passkeys.index.json` | the passkeys' and logins' names, never keys, readable without the passphrase |
/// | `identityJournal` | `passkeys.index.journal` | changes to the index since it was last written whole |
/// | `phoneLinks` | `passkeys.phone-links.sealed` | the phone's link secrets and contacts, sealed under the store key |
/// | `computerLinks` | `passkeys.computer-links.sealed` | the computer's linked phones (`passkey client --link`): names, relays, link secrets and contact IDs, sealed under the store key |
/// | `clearComputerLinks` | `links.json` | where earlier versions kept those links in clear; read once, on the first unlock, into `computerLinks`, then removed |
/// | `domainApprovals` | `domains.json` | the associated-domains approval table (`passkey domains check`) |
/// | `relyingPartyState` | `rp-state.json` | the local relying party's accounts (`passkey rp serve`, `passkey client register`) |
public struct PasskeyFiles: Hashable, Sendable {
    /// One file of the provider's.
    public enum File: String, CaseIterable, Hashable, Sendable {
        case store, lock, identityIndex, identityJournal, phoneLinks, computerLinks, clearComputerLinks, domainApprovals
        case relyingPartyState
    }

    /// The store file, as given (standardized: `.` and `..` removed).
    public let store: URL

    public init(store: URL) {
        self.store = store.standardizedFileURL
    }

    /// The files beside the default store of `environment` (`PasskeyFiles.defaultStore(environment:)`).
    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.init(store: Self.defaultStore(environment: environment))
    }

    /// The default store: `PASSKEY_STORE` when set; otherwise `$XDG_DATA_HOME/passkey/passkeys.sqlite` (an absolute
    /// `XDG_DATA_HOME` only, as the XDG base directory spec asks), else `~/.local/share/passkey/passkeys.sqlite`.
    public static func defaultStore(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        if let explicit = environment["PASSKEY_STORE"], !explicit.isEmpty {
            return URL(fileURLWithPath: explicit)
        }
        let dataHome: URL
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
            dataHome = URL(fileURLWithPath: xdg, isDirectory: true)
        } else if let home = environment["HOME"], !home.isEmpty {
            dataHome = URL(fileURLWithPath: home, isDirectory: true).appendingPathComponent(".local/share")
        } else {
            dataHome = FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".local/share")
        }
        return dataHome.appendingPathComponent("passkey", isDirectory: true).appendingPathComponent("passkeys.sqlite")
    }

    /// The settings file (`Docs/Settings.md`): `$XDG_CONFIG_HOME/passkey/settings.toml` (an absolute
    /// `XDG_CONFIG_HOME` only, as the XDG base directory spec asks), else `~/.config/passkey/settings.toml`.
    public static func settingsFile(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        let configHome: URL
        if let xdg = environment["XDG_CONFIG_HOME"], xdg.hasPrefix("/") {
            configHome = URL(fileURLWithPath: xdg, isDirectory: true)
        } else if let home = environment["HOME"], !home.isEmpty {
            configHome = URL(fileURLWithPath: home, isDirectory: true).appendingPathComponent(".config")
        } else {
            configHome = FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".config")
        }
        return configHome.appendingPathComponent("passkey", isDirectory: true).appendingPathComponent("settings.toml")
    }

    /// The directory that holds the store and the files beside it.
    public var directory: URL { store.deletingLastPathComponent() }

    /// Where `file` is.
    public func url(_ file: File) -> URL {
        switch file {
        case .store: store
        case .lock: URL(fileURLWithPath: store.path + ".lock")
        case .identityIndex: named(".index.json")
        case .identityJournal: named(".index.journal")
        case .phoneLinks: named(".phone-links.sealed")
        case .computerLinks: named(".computer-links.sealed")
        case .clearComputerLinks: directory.appendingPathComponent("links.json")
        case .domainApprovals: directory.appendingPathComponent("domains.json")
        case .relyingPartyState: directory.appendingPathComponent("rp-state.json")
        }
    }

    public var lock: URL { url(.lock) }
    public var identityIndex: URL { url(.identityIndex) }
    public var identityJournal: URL { url(.identityJournal) }
    public var phoneLinks: URL { url(.phoneLinks) }
    public var computerLinks: URL { url(.computerLinks) }
    public var clearComputerLinks: URL { url(.clearComputerLinks) }
    public var domainApprovals: URL { url(.domainApprovals) }
    public var relyingPartyState: URL { url(.relyingPartyState) }

    /// A file named after the store: its name without the extension (`passkeys.sqlite` → `passkeys`), then
    /// `suffix`. A store named only by an extension (`.sqlite`) keeps its whole name.
    private func named(_ suffix: String) -> URL {
        let base = store.deletingPathExtension().lastPathComponent
        return directory.appendingPathComponent((base.isEmpty ? store.lastPathComponent : base) + suffix)
    }
}
