print("passkey")
