import ArgumentParser
import Basics

@main
struct Passkey: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "passkey",
        abstract: "A software passkey authenticator for the terminal.",
        discussion: """
            Passkeys are kept in an encrypted SQLite store, unlocked with a passphrase: `passkey init` creates it. \
            `passkey serve` exposes the passkeys as a CTAP2 security key (a virtual USB device, or UDP for tests), \
            and `passkey scan` answers a computer's hybrid QR code as a phone does. `passkey client` is the \
            browser's side: `client create` and `client get` take your relying party's options JSON and print \
            the credential JSON it verifies, using this computer's passkeys, a phone or a security key.

            `unlock` gives the store's key to an agent for a while (15 minutes unused by default), so that later \
            commands open the store without asking; `lock` makes it forget. A service without a terminal asks \
            through a desktop notification, else queues the request: `pending` lists them, `approve` and `deny` \
            answer one.

            `list` shows the passkeys without the passphrase (from an index of their names beside the store), \
            `delete` removes one, `export` and `import` move passkeys between stores and from Bitwarden or \
            KeePassXC, `share` gives one passkey to a person nearby who runs `receive`, and `info` describes the \
            authenticator and the store. `rp` serves a local web site to try passkeys in a browser, `demo` plays a \
            cross-device sign-in on this machine, `inspect` decodes QR codes and adverts and checks origins, and \
            `domains` answers for associated domains and universal links. `config` shows the settings (flags, \
            PASSKEY_ variables, ~/.config/passkey/settings.toml) and where each came from.

            A failure prints one line, `passkey: what failed: why`, and exits with a status from one table \
            (Docs/ExitStatus.md): 1 failed, 5 declined, 64 wrong arguments, 78 wrong settings, 130 Ctrl-C. Every \
            command takes -q (only the result and errors) and -v (details, and a failure's underlying cause); \
            every command that reports something takes --json (Docs/CommandLine.md).
            """,
        version: PackageVersion.text,
        subcommands: [
            Init.self, Unlock.self, Lock.self, Agent.self, Serve.self, Scan.self, Listen.self, Links.self,
            Pending.self, Approve.self, Deny.self,
            Client.self, RP.self, List.self, Delete.self, Rename.self, Unhide.self, Note.self, Password.self, OTP.self,
            Export.self, Import.self, ImportKey.self, Share.self, Receive.self, Info.self, Demo.self,
            Inspect.self, Domains.self, Config.self, Debug.self,
        ]
    )
}
