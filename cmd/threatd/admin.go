package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/threatd/threatd/core"
)

func migrateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Apply schema migrations and exit",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// openEnv applies the migrations; a missing database is
			// created, and an empty SQLite file becomes one only here.
			return runEnv(cmd, createEvenEmpty, func(e *env) error {
				st, err := e.store.Stats(cmd.Context())
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "schema up to date (%d users, %d tokens, %d threats)\n", st.Users, st.Tokens, st.Threats)
				return nil
			})
		},
	}
}

func userCmd() *cobra.Command {
	user := &cobra.Command{Use: "user", Short: "Manage users"}

	add := &cobra.Command{
		Use:   "add --email E [--name PUBLIC_NAME] [--tier free|paid] [--role submitter|reviewer|admin]",
		Short: "Create a user",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			email, _ := cmd.Flags().GetString("email")
			name, _ := cmd.Flags().GetString("name")
			tier, _ := cmd.Flags().GetString("tier")
			role, _ := cmd.Flags().GetString("role")
			in := core.NewUser{Email: email, Name: name, Tier: core.Tier(tier), Role: core.Role(role)}
			if _, err := in.Normalise(); err != nil {
				return friendly(err)
			}
			return withEnv(cmd, func(e *env) error {
				u, err := core.NewAccounts(e.store).AddUser(cmd.Context(), in)
				if err != nil {
					return friendly(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "user %s created (name %q, tier %s, role %s)\n", u.Email, u.Name, u.Tier, u.Role)
				return nil
			})
		},
	}
	add.Flags().String("email", "", "e-mail address (required)")
	add.Flags().String("name", "", "public name (default: user- and the first 8 characters of the user's id; no part of the e-mail is ever shown)")
	add.Flags().String("tier", "free", "free or paid")
	add.Flags().String("role", "submitter", "submitter, reviewer or admin")
	_ = add.MarkFlagRequired("email")

	setLimit := &cobra.Command{
		Use:   "set-limit --email E --submissions-per-hour N",
		Short: "Set one user's hourly submission limit (0 = no hourly limit)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			email, _ := cmd.Flags().GetString("email")
			n, _ := cmd.Flags().GetInt("submissions-per-hour")
			return withEnv(cmd, func(e *env) error {
				u, err := core.NewAccounts(e.store).SetSubmissionLimit(cmd.Context(), email, n)
				if err != nil {
					return friendly(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "user %s: submissions per hour = %d\n", u.Email, *u.SubmissionsPerHour)
				return nil
			})
		},
	}
	setLimit.Flags().String("email", "", "the user's e-mail address (required)")
	setLimit.Flags().Int("submissions-per-hour", -1, "the new limit (required; 0 = no hourly limit)")
	_ = setLimit.MarkFlagRequired("email")
	_ = setLimit.MarkFlagRequired("submissions-per-hour")

	setPassword := &cobra.Command{
		Use:   "set-password --email E",
		Short: "Set a user's web log-in password, read from standard input (never from a flag)",
		Long: "Reads the password from standard input: the first line, without its line break " +
			"(e.g. `printf '%s' \"$PW\" | threatd user set-password --email E`). " +
			"At least 10 characters. Ends the user's web sessions.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			email, _ := cmd.Flags().GetString("email")
			pw, err := readPassword(cmd.InOrStdin())
			if err != nil {
				return err
			}
			return withEnv(cmd, func(e *env) error {
				u, err := core.NewAccounts(e.store).SetPassword(cmd.Context(), email, pw)
				if err != nil {
					return friendly(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "user %s: web password set\n", u.Email)
				return nil
			})
		},
	}
	setPassword.Flags().String("email", "", "the user's e-mail address (required)")
	_ = setPassword.MarkFlagRequired("email")

	user.AddCommand(add, userListCmd(), userAccessCmd("tier", "free, paid", (*core.Accounts).SetTier), userAccessCmd("role", "submitter, reviewer, admin", (*core.Accounts).SetRole), setLimit, setPassword,
		userDisableCmd(true), userDisableCmd(false))
	return user
}

func tokenCmd() *cobra.Command {
	token := &cobra.Command{Use: "token", Short: "Manage API tokens"}

	issue := &cobra.Command{
		Use:   "issue --email E [--name N]",
		Short: "Issue an API token; prints the token alone (shown once, stored hashed)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			email, _ := cmd.Flags().GetString("email")
			name, _ := cmd.Flags().GetString("name")
			return withEnv(cmd, func(e *env) error {
				secret, _, err := core.NewAccounts(e.store).IssueToken(cmd.Context(), email, name)
				if err != nil {
					return friendly(err)
				}
				fmt.Fprintln(cmd.OutOrStdout(), secret)
				return nil
			})
		},
	}
	issue.Flags().String("email", "", "the owner's e-mail address (required)")
	issue.Flags().String("name", "", "a label for the token")
	_ = issue.MarkFlagRequired("email")

	revoke := &cobra.Command{
		Use:   "revoke --token T",
		Short: "Revoke an API token",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			secret, _ := cmd.Flags().GetString("token")
			return withEnv(cmd, func(e *env) error {
				t, err := core.NewAccounts(e.store).RevokeToken(cmd.Context(), secret)
				if errors.Is(err, core.ErrNotFound) {
					return errors.New("no such token")
				}
				if err != nil {
					return friendly(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "token …%s revoked\n", t.Hint)
				return nil
			})
		},
	}
	revoke.Flags().String("token", "", "the token to revoke (required)")
	_ = revoke.MarkFlagRequired("token")

	token.AddCommand(issue, tokenListCmd(), revoke)
	return token
}

// bootstrapCmd creates a first admin user and token when the database has no
// users yet (what `make run` does on a new data directory).
func bootstrapCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bootstrap [--email E]",
		Short: "On a new database, create a first admin user and print its API token",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			email, _ := cmd.Flags().GetString("email")
			return withEnvCreating(cmd, func(e *env) error {
				st, err := e.store.Stats(cmd.Context())
				if err != nil {
					return err
				}
				if st.Users > 0 {
					fmt.Fprintf(cmd.ErrOrStderr(), "database already has %d user(s); no admin created\n", st.Users)
					return nil
				}
				acc := core.NewAccounts(e.store)
				u, err := acc.AddUser(cmd.Context(), core.NewUser{Email: email, Name: "admin", Tier: core.TierPaid, Role: core.RoleAdmin})
				if err != nil {
					return friendly(err)
				}
				secret, _, err := acc.IssueToken(cmd.Context(), u.Email, "bootstrap")
				if err != nil {
					return friendly(err)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "created admin user %s (tier paid); its API token, shown once:\n", u.Email)
				fmt.Fprintln(cmd.OutOrStdout(), secret)
				return nil
			})
		},
	}
	cmd.Flags().String("email", "admin@localhost", "the admin's e-mail address")
	return cmd
}

// withEnv runs fn with storage opened (and migrated) for an administrative
// command, and stops the storage plugin afterwards. A missing database is
// refused.
func withEnv(cmd *cobra.Command, fn func(e *env) error) error {
	return runEnv(cmd, openExisting, fn)
}

// withEnvCreating is withEnv that creates a missing database (bootstrap).
func withEnvCreating(cmd *cobra.Command, fn func(e *env) error) error {
	return runEnv(cmd, createMissing, fn)
}

func runEnv(cmd *cobra.Command, create creation, fn func(e *env) error) error {
	e, err := openEnv(cmd, false, create, nil)
	if err != nil {
		return err
	}
	defer e.close()
	return fn(e)
}

// readPassword reads the first line of r (at most 4 KiB), without its line
// break.
func readPassword(r io.Reader) (string, error) {
	line, err := bufio.NewReader(io.LimitReader(r, 4096)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("reading the password from standard input: %w", err)
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", errors.New("no password on standard input: pipe it in, e.g. printf '%s' \"$PW\" | threatd user set-password --email E")
	}
	return line, nil
}
