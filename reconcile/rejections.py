"""Why a payer's bank rejected a Pix Automático debit, in words. The BCB's message catalogue
gives each rejection of a recurring charge's attempt (``tentativas[].rejeicao.codigo``) or
of the charge itself (``encerramento.rejeicao.codigo``) a four-letter code; finance reads
what it means, and the code stays beside it for whoever asks the provider."""

from __future__ import annotations

REJECTION_WORDS: dict[str, str] = {
    # Transação interrompida devido a erro no participante do usuário pagador.
    "AB10": "an error at the payer's bank interrupted it",
    # Conta transacional do usuário pagador encerrada.
    "AC05": "the payer's account is closed",
    # Conta transacional do usuário pagador encontra-se bloqueada.
    "AC06": "the payer's account is blocked",
    # Valor da cobrança ultrapassa o valor máximo estabelecido pelo usuário pagador.
    "AM02": "the amount is over the maximum the payer set for the recurrence",
    # Valor da cobrança não corresponde ao valor estabelecido na recorrência.
    "AM09": "the amount is not the one the recurrence states",
    # CPF/CNPJ do usuário pagador não corresponde ao dado contido na recorrência/autorização.
    "DENC": "the payer's CPF/CNPJ is not the one the recurrence was authorised with",
    # Participante não se encontra cadastrado e/ou não iniciou a operação no SPI.
    "DS27": "the payer's bank is not registered in, or not yet operating on, the Pix system",
    # Divergência entre a data de vencimento e a periodicidade da recorrência.
    "DTED": "the due date does not fit the recurrence's periodicity",
}
"""The codes whose meaning the catalogue states plainly. Any other is shown as a code
pixrecon has no words for: guessing its meaning would tell finance the wrong thing to do."""


def rejection_in_words(code: str | None) -> str:
    """``the payer's account is blocked (AC06)``: the meaning, the code in parentheses."""
    if not code:
        return "no code given"
    words = REJECTION_WORDS.get(code.strip().upper())
    if words is None:
        return f"a reason pixrecon has no words for ({code}; the provider can say what it means)"
    return f"{words} ({code})"
