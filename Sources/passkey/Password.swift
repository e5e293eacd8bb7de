import ArgumentParser

extension Passkey {
    /// `passkey password`: the saved passwords beside the passkeys (Docs/Passwords.md).
    struct Password: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Save, show, list and delete passwords, and share them with approved apps.",
            discussion: """
                Passwords are kept in the passkey store, each sealed under the store key like a private key; the \
                index beside the store lists the logins (never the passwords), so `password list` needs no \
                passphrase. See Docs/Passwords.md.
                """,
            subcommands: [Add.self, Get.self, List.self, Delete.self, Request.self])
    }
}
